# The statuscheck image for users with a registry at hand:
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     --build-arg VERSION=v0.1.0 --build-arg REVISION=$(git rev-parse HEAD) \
#     -t quay.io/YOU/statuscheck:v0.1.0 --push .
# `make image` builds the same image offline (build/Containerfile, whose
# text this file's last stage repeats but for the COPY:
# TestImageRecipesAgree). The entrypoint is statuscheck itself, built from
# cmd/statuscheck-cluster, which has every command (the cluster ones
# linked, so the sidecar is one process): the bridge sidecar runs it with
# `args: [bridge]`, the scorecard test with `validate -o scorecard
# /bundle` (docs/integrations.md).
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
ARG TARGETARCH
ARG VERSION=dev
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=linux GOARCH=$TARGETARCH go build -trimpath \
      -ldflags "-s -w -X github.com/statuscheck/statuscheck/internal/cli.buildVersion=${VERSION}" \
      -o /out/linux-${TARGETARCH}/statuscheck-cluster ./cmd/statuscheck-cluster

FROM scratch
ARG TARGETARCH
ARG VERSION=dev
ARG REVISION=unknown
LABEL org.opencontainers.image.title="statuscheck" \
      org.opencontainers.image.description="Checks and keeps OLM's status-source contract: validate, generate, simulate, record, bridge." \
      org.opencontainers.image.source="https://github.com/statuscheck/statuscheck" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
COPY --from=build /out/linux-${TARGETARCH}/statuscheck-cluster /usr/local/bin/statuscheck
# A numeric non-root user: the kubelet refuses runAsNonRoot with a user it
# cannot tell is not root.
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/statuscheck"]
