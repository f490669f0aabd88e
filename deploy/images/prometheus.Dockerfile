# taskd-prometheus:dev: a Prometheus server for the compose cluster, built by
# `make image` from the Prometheus module pinned in deploy/prometheus/go.mod
# (static, with only the static, file and HTTP service discovery: the build
# tag remove_all_sd), on an empty base. Its web UI's assets are not built in
# (they need npm); the HTTP API (/api/v1/...) serves queries and targets.
# The build context is bin/image/.
FROM scratch
COPY prometheus /bin/prometheus
COPY --chown=65532:65532 empty-dir /prometheus
USER 65532:65532
EXPOSE 9090
ENTRYPOINT ["/bin/prometheus"]
CMD ["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"]
