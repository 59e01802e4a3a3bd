# Tollgate gateway image. Build: docker build -t tollgate .
#
# Build stage: compiles TypeScript and bundles the browser client. python3, make and g++ are here
# for native addons (better-sqlite3 compiles from source when no prebuilt binary is reachable); they never reach the runtime.
FROM node:24-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# The workspace's manifest too: npm ci links the client package into node_modules.
COPY package.json package-lock.json ./
COPY packages/client/package.json ./packages/client/package.json
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json tsconfig.cli.json ./
COPY packages ./packages
COPY schemas ./schemas
COPY src ./src
COPY routes ./routes
COPY client ./client
COPY scripts ./scripts
COPY public ./public
COPY bin ./bin
RUN npm run build \
 && npm prune --omit=dev --no-audit --no-fund

# Runtime stage: production dependencies and compiled code only, owned by root and read-only to
# the unprivileged `node` user that runs the gateway. Everything the gateway writes (the SQLite
# store, the tools' workspace) goes to /data, a volume owned by `node`.
FROM node:24-slim AS runtime
# Binding 0.0.0.0 makes the gateway reachable from outside the container, and the gateway refuses
# auth.mode "none" on a non-loopback address: mount a config with auth.mode = "jwt" and point
# TOLLGATE_CONFIG at it (e.g. -v ./tollgate.toml:/etc/tollgate.toml -e TOLLGATE_CONFIG=/etc/tollgate.toml).
ENV NODE_ENV=production \
    TOLLGATE_HOST=0.0.0.0 \
    TOLLGATE_PORT=8080 \
    TOLLGATE_SQLITE_PATH=/data/tollgate.db \
    TOLLGATE_WORKSPACE=/data/workspace
WORKDIR /app
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/public ./public
COPY --from=build /app/bin ./bin
# node_modules/@tollgate/client links here: the terminal client (`tollgate chat`) imports it.
COPY --from=build /app/packages/client/package.json ./packages/client/package.json
COPY --from=build /app/packages/client/dist ./packages/client/dist
RUN mkdir -p /data/workspace && chown -R node:node /data
VOLUME ["/data"]
USER node
EXPOSE 8080
# SIGTERM: running turns are cancelled and recorded, sockets closed with 1001, then exit. The
# server runs as PID 1 directly (not under npm, which does not forward SIGTERM to it).
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.TOLLGATE_PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "dist/src/main.js"]
