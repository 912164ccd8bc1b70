# deltafeed in a container: build with the Swift 6.3 toolchain, run on slim Debian with only the
# runtime libraries, as a non-root user. Mirrors scripts/run: same binary, same defaults. The live
# feed page (/demo) is compiled into the binary, so nothing else needs copying.
#   docker build -t deltafeed .
#   docker run -p 8080:8080 -e DELTAFEED_ADMIN_TOKEN=change-me -v deltafeed-data:/data deltafeed

FROM swift:6.3-bookworm AS build
# The static Foundation's URLSession (used by `prove` and `simulate`) links libcurl: named here
# rather than taken on trust from the Swift image (scripts/check-dockerfile checks both stages).
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libevent-dev libsqlite3-dev libpq-dev zlib1g-dev libdeflate-dev libjemalloc-dev pkg-config libcurl4-openssl-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Resolve dependencies first so source edits do not refetch them.
COPY Package.swift ./
RUN swift package resolve
COPY Sources ./Sources
COPY Tests ./Tests
RUN swift build -c release --product deltafeed --static-swift-stdlib \
 && install -D "$(swift build -c release --show-bin-path)/deltafeed" /out/deltafeed

FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libevent-2.1-7 libevent-pthreads-2.1-7 libsqlite3-0 libpq5 zlib1g libdeflate0 libjemalloc2 libcurl4 ca-certificates curl \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /data --create-home deltafeed
COPY --from=build /out/deltafeed /usr/local/bin/deltafeed
USER deltafeed
WORKDIR /data
ENV DELTAFEED_HOST=0.0.0.0 \
    DELTAFEED_PORT=8080 \
    DELTAFEED_DB=/data/deltafeed.sqlite \
    DELTAFEED_SEED_DEMO=1
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD curl -fsS http://127.0.0.1:8080/healthz || exit 1
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/deltafeed"]
CMD ["serve"]
