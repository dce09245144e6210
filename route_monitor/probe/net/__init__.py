"""One probe's connection, below any protocol: name resolution, TCP, TLS on memory BIOs, and the HTTP/1.1 exchange."""
