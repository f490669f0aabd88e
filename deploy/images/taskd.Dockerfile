# taskd:dev: taskd and taskctl, static binaries built by `make image`, on an
# empty base (nothing can be pulled here, and nothing else is needed). The
# build context is bin/image/.
FROM scratch
COPY taskd taskctl /
# A numeric non-root user: scratch has no /etc/passwd to name one.
USER 65532:65532
# Reachable from other containers by default; advertise with --advertise.
ENV TASKD_LISTEN=0.0.0.0:7420 TASKD_HTTP=0.0.0.0:7421
EXPOSE 7420 7421
# `taskd health` asks /healthz on TASKD_HTTP: no shell, no curl needed. Set
# the HTTP address through TASKD_HTTP (not --http) so that both agree.
HEALTHCHECK --interval=5s --timeout=4s --start-period=60s --retries=3 CMD ["/taskd", "health"]
ENTRYPOINT ["/taskd"]
