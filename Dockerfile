# syntax=docker/dockerfile:1
#
# Container images of nexa (docs/ci.md, "Container images"). Two targets:
#
#   docker build -t nexa .                     # default: the static binary, non-root
#   docker build --target tools -t nexa:tools .  # plus python3 and bubblewrap
#
# The build downloads Go modules and Debian packages only. VERSION and
# COMMIT stamp the binary as `make dist` does (`nexa version --json`).

ARG GO_IMAGE=golang:1.26-trixie
ARG BASE_IMAGE=debian:trixie-slim

# build: a static binary, as `make build` makes it.
FROM ${GO_IMAGE} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=0.1.0-dev
ARG COMMIT=unknown
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/nexa-run/nexa/internal/cli.Version=${VERSION} -X github.com/nexa-run/nexa/internal/cli.Commit=${COMMIT}" \
      -o /out/nexa ./cmd/nexa

# base: what every image has. CA certificates for the model providers' HTTPS
# endpoints, and an unprivileged user that owns the working directory, where
# the run store (.nexa/) is created.
FROM ${BASE_IMAGE} AS base
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 10001 nexa \
 && useradd --uid 10001 --gid 10001 --home-dir /home/nexa --create-home --shell /usr/sbin/nologin nexa \
 && mkdir /srv/nexa && chown nexa:nexa /srv/nexa
COPY --from=build /out/nexa /usr/local/bin/nexa

# tools: for agents whose tools are written in Python, and for tools with
# `sandbox: true` (bubblewrap). bubblewrap needs user namespaces, which the
# container runtime must allow (docs/ci.md, "Container images").
FROM base AS tools
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 bubblewrap \
 && rm -rf /var/lib/apt/lists/*
USER 10001:10001
WORKDIR /srv/nexa
ENTRYPOINT ["nexa"]
CMD ["--help"]

# nexa (the default target, last): the binary alone; Python tools are
# refused with a clear error here, never run another way.
FROM base AS nexa
USER 10001:10001
WORKDIR /srv/nexa
ENTRYPOINT ["nexa"]
CMD ["--help"]
