# syntax=docker/dockerfile:1
#
# The sandbox as an image:
#   docker build -t shipping-sandbox .
#   docker run --rm -p 4010:4010 -p 4443:4443 shipping-sandbox
# Flags go after the image name (`... shipping-sandbox --tls-name sandbox`), or as their variables
# (`-e SANDBOX_TLS_NAMES=sandbox`); `--help` lists them all.
#
# Over PostgreSQL instead of the SQLite file in /data (several containers with the same URL act as one):
#   docker run --rm -p 4010:4010 -e DATABASE_URL=postgres://user:password@db.example:5432/sandbox shipping-sandbox
# /data then keeps only the HTTPS certificate. See examples/compose/compose.postgres.yaml.
#
# Node 20: the major the tests and CI run on.

# Build stage: install (better-sqlite3 is compiled where no prebuilt binary fits the platform), then
# bundle with esbuild and drop the development dependencies.
FROM node:20-bookworm-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
# What `npm run build` (scripts/build.mjs) reads.
COPY tsconfig.json ./
COPY scripts ./scripts
COPY src ./src
# The run stage's node flags, so that V8 accepts the code cache the build makes under them.
ENV NODE_OPTIONS=--max-semi-space-size=4
RUN npm run build && npm prune --omit=dev

# Run stage: only what the server needs, as the unprivileged `node` user.
FROM node:20-bookworm-slim
# In a container the sandbox listens on every interface, which makes `--webhook-targets public` the
# default: webhooks may go to public addresses only. To deliver to the host (a test suite's receiver),
# run with `--add-host=host.docker.internal:host-gateway` and allow that name, plus plain http:// if the
# receiver has no TLS:
#   -e SANDBOX_WEBHOOK_ALLOW_HOSTS=host.docker.internal -e SANDBOX_ALLOW_HTTP_WEBHOOKS=true
# The image allows no host by itself: a sandbox shared by many pipelines must not let its tenants reach
# the machine it runs on.
#
# The data directory is /data: the database and the HTTPS certificate (/data/tls/cert.pem, valid for
# localhost, the container's host name and every --tls-name). It lives as long as the container; to keep
# it, mount a volume there (`-v sandbox-data:/data`; a host directory must be writable by uid 1000).
#
# V8's code cache: the build starts the sandbox once and keeps the compiled bundle in dist/code-cache/
# (see src/launcher.ts), for the folder, the Node version and the node flags of the build stage, which
# are this stage's: each container starts without compiling it.
#
# NODE_OPTIONS caps V8's young generation at 8 MiB (two semi-spaces of 4): left to itself it grows to
# 32 MiB under load and stays resident. `-e NODE_OPTIONS=` gives V8 its default back (and a container
# then compiles the bundle as it starts, the cache having been made under the cap).
#
# The health check reads the port the sandbox really bound from its port file (SANDBOX_PORT_FILE, written
# once it listens and removed when it stops), so it follows PORT or --port wherever they move it. Leave
# --port-file unset: it would move the file away from the check.
ENV NODE_ENV=production \
    NODE_OPTIONS=--max-semi-space-size=4 \
    HOST=0.0.0.0 \
    PORT=4010 \
    HTTPS_PORT=4443 \
    SANDBOX_DATA_DIR=/data \
    SANDBOX_PORT_FILE=/tmp/shipping-sandbox.json
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY fixtures ./fixtures
COPY scenarios ./scenarios
# Made here so that a named volume mounted on /data starts out owned by `node`.
RUN mkdir -p /data && chown node:node /data
USER node
# 4010 is HTTP, 4443 HTTPS (the defaults; publish the ports you choose).
EXPOSE 4010 4443
HEALTHCHECK --interval=5s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "Promise.resolve().then(()=>JSON.parse(require('fs').readFileSync(process.env.SANDBOX_PORT_FILE,'utf8')).origin).then(o=>fetch(o+'/healthz')).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# An entry point, so that flags given to `docker run` after the image name reach the sandbox.
ENTRYPOINT ["node", "dist/main.js"]
CMD []
