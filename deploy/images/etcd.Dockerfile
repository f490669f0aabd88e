# taskd-etcd:dev: the etcd server of the etcd module taskd is built against
# (cmd/etcd), a static binary built by `make image`, on an empty base. Run it
# with etcd's own flags. The build context is bin/image/.
FROM scratch
COPY etcd /
# The data directory, owned by the non-root user so that a fresh named
# volume mounted here is writable.
COPY --chown=65532:65532 empty-dir /var/lib/etcd
USER 65532:65532
EXPOSE 2379 2380
ENTRYPOINT ["/etcd"]
CMD ["--data-dir", "/var/lib/etcd"]
