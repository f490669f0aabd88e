# taskd-demo-handler:dev: the compose cluster's demo webhook handler
# (deploy/compose/handler), a static binary built by `make image`, on an empty
# base. The build context is bin/image/.
FROM scratch
COPY handler /
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/handler"]
