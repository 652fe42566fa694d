#!/usr/bin/env bash
# Builds the gateway's container image (Dockerfile) with Debian's podman. No image registry is
# reachable from CI, so the base is a stand-in made from Debian's own packages (Debian 13's Node.js
# 20.19 and npm), with this machine's trusted certificates and npm settings, which is how this
# machine reaches the npm registry. They go into the stand-in only: the Dockerfile knows nothing of
# them. Idempotent: the stand-in is made once (again only when the machine's certificates change),
# and podman reuses every layer whose inputs are unchanged.
#
#   bash .ci/image.sh             builds localhost/chain-gateway:ci (IMAGE=… for another name)
#
# It prints the image's name and size last. test/deploy/image.test.ts runs it before it runs the
# image; docs/deploy.md says how to build on the default base (node:22-bookworm-slim) instead.
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=${IMAGE:-localhost/chain-gateway:ci}
BASE=${BASE:-localhost/chain-gateway-base:trixie}
CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt
# On these machines podman needs runc (cgroups v1), and limits under the hard file limit (20,000):
# its defaults are above it, and the container would not start.
PODMAN=(podman --runtime runc)
ULIMITS=(--ulimit nofile=16384:16384 --ulimit nproc=8192:8192)

# Debian's podman and mmdebstrap, installed when missing (as root; CI is). `.ci/run` installs them
# too, with its retries; this is for a developer's first run.
missing=()
command -v podman > /dev/null || missing+=(podman)
command -v runc > /dev/null || missing+=(runc)
command -v mmdebstrap > /dev/null || missing+=(mmdebstrap)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "error: ${missing[*]} missing: apt-get install podman runc mmdebstrap uidmap slirp4netns fuse-overlayfs" >&2
    exit 1
  fi
  echo "installing Debian's ${missing[*]} to build the image"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq podman runc mmdebstrap uidmap slirp4netns fuse-overlayfs > /dev/null
fi

# The stand-in base, labelled with the checksum of the certificates it was given: a machine whose
# certificates changed makes it anew.
ca_sum=$(sha256sum "$CA_BUNDLE" | cut -c1-64)
made_with=$("${PODMAN[@]}" image inspect --format '{{ index .Labels "ca-bundle" }}' "$BASE" 2> /dev/null || true)
if [ "$made_with" != "$ca_sum" ]; then
  echo "making the stand-in base $BASE from Debian 13's packages (mmdebstrap)"
  started=$SECONDS
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  # minbase: dpkg, apt and the essential set; nodejs and npm from Debian, without documentation. The
  # machine's certificate bundle replaces Debian's, so that npm and Node trust what this machine does.
  mmdebstrap --quiet --variant=minbase --include=nodejs,npm,ca-certificates \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --customize-hook="cp '$CA_BUNDLE' \"\$1/etc/ssl/certs/ca-certificates.crt\"" \
    trixie "$work/base.tar"
  # This machine's npm settings (`npm config list`: its cafile; no audit, fund or update notice) and
  # Node's extra certificates, as the environment of every build step on this base.
  "${PODMAN[@]}" import --quiet \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change "ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt" \
    --change "ENV npm_config_cafile=/etc/ssl/certs/ca-certificates.crt" \
    --change 'ENV npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false' \
    --change "LABEL ca-bundle=$ca_sum" \
    "$work/base.tar" "$BASE" > /dev/null
  rm -rf "$work"
  trap - EXIT
  echo "stand-in base made in $((SECONDS - started)) s"
fi

# Debian 13's npm is 9.2: the Dockerfile's first stage brings it to the lock file's npm 11, as it does
# for the default base's npm 10 (so CI runs the very step a default build runs). --format docker
# keeps HEALTHCHECK, which the OCI format has no field for. --network host: the build's npm reaches
# the registry as this machine does.
# Podman 4.3 (Debian 12's buildah 1.28) reuses a cached LABEL or ENV step whose build argument
# changed, so a second build kept the first revision: the two that name the revision are given on
# the command line as well, which applies them after the cache (Docker keys its cache on the ARG).
version=$(node -p 'require("./package.json").version')
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
started=$SECONDS
"${PODMAN[@]}" build --format docker --network host "${ULIMITS[@]}" \
  --build-arg "BASE_IMAGE=$BASE" --build-arg "VERSION=$version" --build-arg "REVISION=$revision" \
  --label "org.opencontainers.image.version=$version" \
  --label "org.opencontainers.image.revision=$revision" --env "BUILD_REVISION=$revision" \
  --tag "$IMAGE" .
echo "image built in $((SECONDS - started)) s"
size=$("${PODMAN[@]}" image inspect --format '{{ .Size }}' "$IMAGE")
echo "$IMAGE: $((size / 1000000)) MB"
