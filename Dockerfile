# tidings in a container: a Rust build stage, then a small Debian runtime with only the binary.
# Build: docker build -t tidings .   Run: see compose.yaml, or
#   docker run -p 8080:8080 -v tidings-data:/data tidings
# (SQLite in the /data volume; set TIDINGS_DATABASE_URL=postgres://… for PostgreSQL).

FROM rust:1.94-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin tidings \
    && install -m 0755 target/release/tidings /usr/local/bin/tidings

FROM debian:bookworm-slim
# ca-certificates: feeds and PostgreSQL over TLS; nothing else is needed at run time.
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin tidings \
    && mkdir -p /data \
    && chown tidings:tidings /data
COPY --from=build /usr/local/bin/tidings /usr/local/bin/tidings
USER tidings
WORKDIR /data
VOLUME ["/data"]
# No MALLOC_ARENA_MAX: tidings sets glibc's allocator itself at its start (two arenas, see
# docs/operations.md); an ENV here would still win over that.
ENV TIDINGS_LISTEN=0.0.0.0:8080 \
    TIDINGS_DATABASE_URL=sqlite:///data/tidings.db \
    TIDINGS_LOG_FORMAT=json
EXPOSE 8080
# /healthz never touches the database, so a database outage does not get the container
# restarted; bash's /dev/tcp spares the image an HTTP client.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/8080 && printf 'GET /healthz HTTP/1.0\\r\\nHost: localhost\\r\\n\\r\\n' >&3 && head -n1 <&3 | grep -q ' 200 '"]
ENTRYPOINT ["tidings"]
CMD ["serve"]
