# The gateway's container image: `npm start`, in production, as a non-root user, with production
# dependencies only. With no upstream configured it refuses to start unless DEVNET=true asks for the
# embedded devnet, its try-out. Build and run it as docs/deploy.md says:
#
#   podman build --format docker -t chain-gateway .      (or docker build -t chain-gateway .)
#   podman run --rm -p 4000:4000 -e DEVNET=true chain-gateway
#
# The base is an argument so that a build that cannot reach an image registry can pass a local one
# (CI builds on a stand-in made from Debian's packages: .ci/image.sh). Any Debian-like base with
# Node.js 20.19+, npm and useradd will do.
ARG BASE_IMAGE=node:22-bookworm-slim

# npm as the lock file was written: package-lock.json is npm 11's, and npm 9 or 10 read it as out
# of sync with package.json (a missing optional peer that npm 11 accepts), so `npm ci` would refuse
# it. The default base ships npm 10, hence the upgrade, which a base already on npm 11 skips.
FROM ${BASE_IMAGE} AS npm
ARG NPM_VERSION=11.19.1
RUN if [ "$(npm --version | cut -d. -f1)" != "${NPM_VERSION%%.*}" ]; then \
      npm install --global --no-audit --no-fund "npm@${NPM_VERSION}" && npm cache clean --force; \
    fi && npm --version
WORKDIR /app
COPY package.json package-lock.json ./

# The build: every dependency (TypeScript among them), then `npm run build` into dist/ (src/ only:
# tsconfig.build.json compiles no test).
FROM npm AS build
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# The dependencies the gateway runs with, and nothing else. Without optional ones too: npm keeps a
# dev dependency that a production one names as an optional peer (TypeScript, for valibot's types),
# and the one optional production dependency is types only.
FROM npm AS dependencies
RUN npm ci --omit=dev --omit=optional --no-audit --no-fund && npm cache clean --force

# What runs: Node, the production dependencies, the compiled gateway (with its source maps, for
# --enable-source-maps) and operations/, which the gateway reads at run time (GraphiQL's tabs and the
# frontends' operation labels: OPERATIONS_DIR in src/graphql/graphiql.ts). The npm of the base stays
# unused: the command below is `npm start`'s, without npm (whose prestart would rebuild).
FROM ${BASE_IMAGE}
# A user of its own with a fixed numeric id, so that Kubernetes' runAsNonRoot can check it.
RUN groupadd --system --gid 10001 gateway \
 && useradd --system --uid 10001 --gid gateway --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin gateway
WORKDIR /app
COPY --from=dependencies /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY operations ./operations
# HOST=0.0.0.0: reachable from outside the container (the gateway's own default is 127.0.0.1).
ENV NODE_ENV=production HOST=0.0.0.0 PORT=4000
USER 10001:10001
# 4000: GraphQL, health and readiness; 9464: /metrics alone (METRICS_PORT's production default),
# for scrapers inside the cluster, never behind the public Service or an ingress.
EXPOSE 4000 9464
# Node is PID 1 and handles SIGTERM and SIGINT itself: both drain (docs/operating.md, Shutdown).
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 4000) + '/healthz').then((r) => process.exit(r.status === 200 ? 0 : 1), () => process.exit(1))"]
# What the image is, as OCI's annotations name it (registries, scanners, `docker inspect`), and the
# revision the gateway reports in its build_info metric and start banner (BUILD_REVISION). Pass them
# when building: --build-arg REVISION="$(git rev-parse HEAD)" (and SOURCE=<your repository>);
# VERSION is package.json's (test/ops/logs.test.ts holds the two together). Last, so that a new
# revision rebuilds no layer.
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG SOURCE=https://git.example/chain-gateway
LABEL org.opencontainers.image.title="chain-gateway" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
ENV BUILD_REVISION=${REVISION}
# `npm start`'s command and V8 flags (package.json).
CMD ["node", "--max-semi-space-size=16", "--max-old-space-size=512", "--no-allocation-site-pretenuring", "--enable-source-maps", "dist/main.js"]
