# syntax=docker/dockerfile:1
# Build stage: compile better-sqlite3 and the TypeScript sources.
FROM node:26-bookworm-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev

# Run stage: only what the server needs, as the unprivileged `node` user.
FROM node:26-bookworm-slim
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=4010 \
    HTTPS_PORT=4443 \
    SANDBOX_DATA_DIR=/data
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY fixtures ./fixtures
COPY scenarios ./scenarios
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
# 4443 is HTTPS; its certificate (for localhost) is made in /data/tls on first start.
EXPOSE 4010 4443
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||4010)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
CMD ["node", "dist/main.js"]
