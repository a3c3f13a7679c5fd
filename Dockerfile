# NotificationHub: a release `hub` on a slim Debian, running as a non-root user.
#
#   docker build -t notification-hub .
#   docker run -p 8080:8080 -v hub-data:/var/lib/hub notification-hub     # the sample hub.yaml
#   docker run … -v ./my-hub.yaml:/etc/hub/hub.yaml:ro notification-hub    # your own
#
# Every hub.yaml key can be set with an environment variable (README, "hub.yaml"): the ENV lines
# below listen on all interfaces, log JSON and keep the SQLite store in the volume.
# HubCLITests.DeploymentTests runs this file's ENTRYPOINT, CMD, ENV and HEALTHCHECK against a hub.

# --- build: the toolchain image, a release binary (Swift runtime and Foundation linked in) ---
FROM swift:6.3-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends libsqlite3-dev zlib1g-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Dependencies first, so source edits reuse the resolved and built packages.
COPY Package.swift Package.resolved ./
RUN swift package resolve
COPY . .
RUN swift build -c release --product hub && install -D -m 0755 "$(swift build -c release --show-bin-path)/hub" /out/hub

# --- run: glibc 2.36 (the binary's packed relocations need it), the C libraries hub links ---
FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates libsqlite3-0 libstdc++6 zlib1g \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 hub \
    && useradd --system --uid 10001 --gid hub --home-dir /var/lib/hub --shell /usr/sbin/nologin hub \
    && install -d -o hub -g hub -m 0700 /var/lib/hub
COPY --from=build /out/hub /usr/local/bin/hub
# The sample configuration and its development-only secrets (examples/dev/README.md): replace
# them by mounting your own hub.yaml (and secrets) over /etc/hub.
COPY hub.yaml /etc/hub/hub.yaml
COPY examples/dev /etc/hub/examples/dev
ENV HUB_SERVER_LISTEN=0.0.0.0:8080
ENV HUB_LOGGING_FORMAT=json
ENV HUB_STORE="{sqlite: {path: /var/lib/hub/hub.sqlite}}"
USER hub
WORKDIR /var/lib/hub
VOLUME /var/lib/hub
EXPOSE 8080
# SIGTERM (docker stop) ends long-polls, drains in-flight sends and exits 0.
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=15s --timeout=5s --start-period=10s --retries=3 CMD ["/usr/local/bin/hub", "health", "--url", "http://127.0.0.1:8080"]
ENTRYPOINT ["/usr/local/bin/hub"]
CMD ["serve", "--config", "/etc/hub/hub.yaml"]
