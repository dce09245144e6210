#!/usr/bin/env bash
# Install everything the tests need, idempotently; fast when it is already there.
#
#   scripts/bootstrap.sh            python venv (.venv) with the project and its test extras
#   scripts/bootstrap.sh --system   also Debian packages (Prometheus, Alertmanager,
#                                   blackbox_exporter, etcd) and the Kubernetes control-plane
#                                   binaries (built once from Debian's source package, cached)
#
# Environment: RM_VENV (default .venv), RM_CACHE (default ~/.cache/route-monitor).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv=${RM_VENV:-$here/.venv}
cache=${RM_CACHE:-$HOME/.cache/route-monitor}
kube_version=1.20.2
kube_dir=$cache/kubernetes-$kube_version

log() { printf '[bootstrap] %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

apt_packages=(prometheus prometheus-alertmanager prometheus-blackbox-exporter etcd-server openssl)
build_packages=(golang-go rsync golang-github-modern-go-reflect2-dev make)

apt_updated=0
apt_install() {
  local missing=()
  for p in "$@"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ $apt_updated = 0 ]; then as_root apt-get update -qq; apt_updated=1; fi
  log "apt-get install ${missing[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

build_kube() {
  if [ -x "$kube_dir/kube-apiserver" ] && [ -x "$kube_dir/kube-controller-manager" ]; then return 0; fi
  log "building kube-apiserver and kube-controller-manager $kube_version from Debian's source (about 8 minutes, once)"
  apt_install "${build_packages[@]}"
  local src=/etc/apt/sources.list.d/debian-src.sources
  if [ ! -f "$src" ] && [ -f /etc/apt/sources.list.d/debian.sources ]; then
    sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources | as_root tee "$src" >/dev/null
    as_root apt-get update -qq
  fi
  local work; work=$(mktemp -d)
  ( cd "$work"
    apt-get source --download-only kubernetes >/dev/null
    tar xzf kubernetes_*.orig.tar.gz
    cd kubernetes-$kube_version
    # the vendored reflect2 v1.0.1 crashes under Go >= 1.18: use Debian's 1.0.2
    rm -rf vendor/github.com/modern-go/reflect2
    cp -r /usr/share/gocode/src/github.com/modern-go/reflect2 vendor/github.com/modern-go/reflect2
    rm -f vendor/github.com/modern-go/reflect2/*_test.go
    env HOME="$work/home" GOPATH="$work/gopath" GOCACHE="$work/gocache" CGO_ENABLED=0 \
      make WHAT="cmd/kube-apiserver cmd/kube-controller-manager" >"$work/build.log" 2>&1 \
      || { tail -30 "$work/build.log" >&2; exit 1; }
    mkdir -p "$kube_dir.tmp"
    cp _output/bin/kube-apiserver _output/bin/kube-controller-manager "$kube_dir.tmp/"
  )
  rm -rf "$kube_dir"; mv "$kube_dir.tmp" "$kube_dir"
  rm -rf "$work"
  log "cached in $kube_dir"
}

python_env() {
  local stamp=$venv/.installed
  if [ ! -x "$venv/bin/python" ]; then
    log "creating $venv"
    python3 -m venv "$venv"
  fi
  if [ ! -f "$stamp" ] || [ "$here/pyproject.toml" -nt "$stamp" ]; then
    log "pip install -e .[test]"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -e "$here[test]"
    touch "$stamp"
  fi
}

system=0
for arg in "$@"; do
  case $arg in
    --system) system=1 ;;
    *) echo "usage: $0 [--system]" >&2; exit 2 ;;
  esac
done
if [ $system = 1 ]; then
  apt_install "${apt_packages[@]}"
  build_kube
fi
python_env
