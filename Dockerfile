# statuscheck as a scorecard custom test image (see docs/integrations.md).
#   docker build -t quay.io/YOU/statuscheck-scorecard:v0.1.0 .
# Scorecard mounts the bundle under test at /bundle; the image prints a
# scorecard.operatorframework.io/v1alpha3 TestStatus on stdout.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/statuscheck ./cmd/statuscheck \
 && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/statuscheck-sdk-validator ./cmd/statuscheck-sdk-validator

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/ /usr/local/bin/
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/statuscheck", "validate", "-o", "scorecard", "/bundle"]
