# syntax=docker/dockerfile:1
# Multi-stage build: the release build (scripts/build-release.sh, which makes the site with
# scripts/build-site.sh), then a slim runtime image.
# CI builds the same site (scripts/test.sh: scripts/build-release.sh --site-only) and serves
# it from its debug server; run.sh builds the same release server as this.

FROM rust:1.95-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends nodejs npm \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# The site's tools, as scripts/setup.sh installs them: the wasm32 target, wasm-bindgen-cli,
# burnrate-wasm-split (tools/wasm-split) and the npm packages in tools/site (binaryen's
# wasm-opt: Debian's older build breaks hydration). wasm-bindgen-cli first: a change under
# tools/ then leaves its layer cached.
RUN rustup target add wasm32-unknown-unknown \
 && cargo install wasm-bindgen-cli --version =0.2.130
COPY tools tools
RUN cargo install --path tools/wasm-split --locked \
 && cd tools/site && npm ci --no-audit --no-fund
ENV SQLX_OFFLINE=true
COPY . .
RUN scripts/build-release.sh

FROM debian:bookworm-slim
# postgresql: the binaries for the zero-configuration private cluster (unused when
# DATABASE_URL is set); curl: the health check.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl postgresql \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /app --shell /usr/sbin/nologin burnrate \
 && mkdir -p /data && chown burnrate:burnrate /data
COPY --from=build /src/target/release/burnrate /app/bin/burnrate
COPY --from=build /src/target/site /app/site
ENV BURNRATE_ADDR=0.0.0.0:3000 \
    BURNRATE_DATA_DIR=/data \
    LEPTOS_SITE_ROOT=/app/site
USER burnrate
WORKDIR /app
VOLUME /data
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=3s --start-period=30s CMD curl -fsS http://127.0.0.1:3000/healthz || exit 1
ENTRYPOINT ["/app/bin/burnrate"]
CMD ["serve"]
