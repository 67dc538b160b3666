# xpview container image.
#
#   docker build -t xpview .
#   docker run --rm -p 6006:6006 -v /path/to/logdir:/logs:ro xpview
#
# Stage 1 builds and runs the unit tests with exactly the steps CI runs
# (.ci/docker-build); stage 2 holds only the binary and its runtime
# libraries.  Nothing is fetched at run time (air-gapped friendly).
FROM debian:bookworm-slim AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config libmicrohttpd-dev libjansson-dev \
      libprotobuf-c-dev protobuf-c-compiler libnghttp2-dev zlib1g-dev libcmocka-dev libssl-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# .dockerignore keeps build*/ (a stale CMakeCache.txt), .git and
# node_modules out of the context (checked by tests/dockerignore.sh).
COPY . .
RUN bash .ci/docker-build build-docker

FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libmicrohttpd12 libjansson4 libprotobuf-c1 libnghttp2-14 zlib1g libssl3 \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /nonexistent --shell /usr/sbin/nologin xpview
COPY --from=build /src/build-docker/xpview /usr/local/bin/xpview
USER xpview
EXPOSE 6006
VOLUME /logs
HEALTHCHECK --interval=30s --timeout=3s CMD ["xpview", "healthcheck", "http://127.0.0.1:6006/healthz"]
ENTRYPOINT ["xpview"]
CMD ["--logdir", "/logs", "--bind_all", "--port", "6006"]
