#!/usr/bin/env bash
# Runs bench/tcp_probe as a pair under mpirun (scripts/netns-mpirun.sh -np 2 --map-by node):
# rank 0 serves, rank 1 probes rank 0's host. Usage: tcp_probe_pair.sh TCP_PROBE SERVER_ADDR [MiB]
set -u
probe=$1 addr=$2 mib=${3:-256}
case ${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-?}} in   # (Open MPI, MPICH)
  0) exec "$probe" serve 47311 ;;
  1) exec "$probe" probe "$addr" 47311 "$mib" ;;
  *) echo "tcp_probe_pair.sh: run with 2 ranks under mpirun" >&2; exit 2 ;;
esac
