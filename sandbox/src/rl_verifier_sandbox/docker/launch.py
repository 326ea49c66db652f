"""The in-container side of a docker job: one ``exec`` of a root supervisor shell script.

The supervisor runs as root with only CAP_SETUID, CAP_SETGID and CAP_KILL; the job runs as
``JOB_UID`` with no capabilities. Per job it

1. reads one header line ``NONCE RO_LEN JOB_LEN`` from stdin, then RO_LEN bytes (a tar of
   the read-only files, unpacked as root into root-owned tmpfs mounts);
2. starts the job through ``setpriv`` as ``JOB_UID``: the job's shell unpacks the next
   JOB_LEN bytes (a tar of the job's files) into ``/job``, sets the job's rlimits, clears the
   environment and execs the argv; the rest of stdin is the job's own stdin;
3. kills the job at its wall deadline, and when the CPU time of all its processes together
   (the container's cgroup counter, polled every 50 ms from the job's start) passes
   ``cpu_s``: a root watcher the job cannot signal (``WATCH_SH``, in bash: ``read -t`` waits
   without forking, so a fork bomb that fills the pids limit cannot stop it). Without bash a
   shell timer keeps the deadline; without bash or a readable counter ``RLIMIT_CPU`` per
   process is the only CPU limit;
4. when the job's main process ends, kills every process of ``JOB_UID`` (reading ``/proc``
   with shell builtins only, so a fork bomb that fills the pids limit cannot stop it), wipes
   ``/job``, ``/tmp``, ``/dev/shm``, ``/dev/mqueue``, the job uid's SysV IPC and the
   read-only files;
5. writes one report line ``NONCE STATUS TIMED_OUT CPU_CAP CPU_NS OOM_KILLS PIDS_REFUSED CLEAN``
   as the very last bytes of stderr (``CPU_CAP``: 1 the watcher killed the job for CPU, 0 it
   watched, -1 no CPU watch). The job never sees the nonce (read from stdin before the job
   exists; the supervisor's memory and fds are out of a different uid's reach), so it cannot
   forge the report. CPU time, OOM kills and refused forks come from the container's cgroup.
"""

from __future__ import annotations

import io
import math
import secrets
import tarfile
from collections.abc import Mapping
from dataclasses import dataclass

from rl_verifier_sandbox.api import UNLIMITED_CPU_S, Limits

JOB_UID = 65534  # "nobody" in Debian-based images
WORK_DIR = "/job"
CAPS = ["SETUID", "SETGID", "KILL"]  # the supervisor's only capabilities
# docker-init, sleep, supervisor, the watcher and one spare, so the job may have processes + 1
# (processes exactly without bash, where the timer is a shell and its sleep); the wiper
# starts after the job is gone.
EXTRA_PIDS = 5
CPU_COUNTERS = ("/sys/fs/cgroup/cpuacct/cpuacct.usage", "/sys/fs/cgroup/cpu.stat")  # v1, v2

# Runs as the job uid: unpack the job's files, apply rlimits, exec the job.
JOB_SH = r"""
n=$1 cpu=$2 fsize=$3 nofile=$4; shift 4
if [ "$n" -gt 0 ]; then
  head -c "$n" | tar -x -f - -C /job --no-same-owner -m 2>/dev/null \
    || { echo "sandbox: could not write the job's files into /job" >&2; exit 125; }
fi
echo 1000 > /proc/self/oom_score_adj 2>/dev/null  # the OOM killer takes the job first
ulimit -c 0
ulimit -n "$nofile"
[ "$fsize" = unlimited ] || ulimit -f "$fsize"
if [ "$cpu" != unlimited ]; then ulimit -S -t "$cpu"; ulimit -H -t $((cpu + 1)); fi
cd /job || exit 125
exec nice -n 19 "$@"  # within its container only: lets the supervisor outrun a fork bomb
"""

# Kills every live process of uid $U (a root shell with CAP_KILL) until none is left. Only
# shell builtins, so it works even when a fork bomb holds every slot of the pids limit.
REAP_FUNCTION = r"""
reap() {
  i=0
  while [ $i -lt 5000 ]; do
    left=0
    for p in /proc/[0-9]*; do
      u= s=
      { while read -r k v rest; do
          case $k in State:) s=$v ;; Uid:) u=$v; break ;; esac
        done < "$p/status"; } 2>/dev/null
      [ "$u" = "$U" ] && [ "$s" != Z ] && [ "$s" != X ] || continue
      kill -9 "${p#/proc/}" 2>/dev/null
      left=1
    done
    [ $left = 0 ] && return 0
    i=$((i + 1))
  done
  return 1
}
"""

# Runs as the job uid after the job: removes what it left where it could write. Only globs
# and builtins unless something is there.
WIPE_SH = r"""
set -- /job/* /job/.[!.]* /job/..?* /tmp/* /tmp/.[!.]* /tmp/..?* \
  /dev/shm/* /dev/shm/.[!.]* /dev/shm/..?* /dev/mqueue/*
for f; do
  if [ -e "$f" ] || [ -L "$f" ]; then
    chmod -R u+rwX /job /tmp /dev/shm 2>/dev/null
    rm -rf "$@" 2>/dev/null
    break
  fi
done
for f in /proc/sysvipc/shm /proc/sysvipc/sem /proc/sysvipc/msg; do
  { read -r header; read -r first; } < "$f" 2>/dev/null || continue
  [ -n "$first" ] && { ipcrm --all 2>/dev/null; break; }
done
exit 0
"""

# Sets C to the container's CPU time in ns (-1 where unreadable; the files of CPU_COUNTERS);
# builtins only, in sh and bash.
CPU_FUNCTION = r"""
cpu_ns() {
  C=-1
  if [ -r V1 ]; then
    read -r C < V1
  elif [ -r V2 ]; then
    while read -r k v; do [ "$k" = usage_usec ] && C=${v}000; done < V2
  fi
}
""".replace("V1", CPU_COUNTERS[0]).replace("V2", CPU_COUNTERS[1])

# The root watcher (bash): USR1 to the supervisor at the wall deadline, USR2 once the
# container's CPU time since C0 passes CAP ns ("unlimited": no CPU watch, C0 -1: unreadable).
# Its stdin is a pipe it also opens for writing, so ``read -t`` on it just waits: it never
# forks, and the job (another uid) can neither signal it nor reach its fds.
WATCH_SH = (
    CPU_FUNCTION
    + r"""
SUP=$1 WALL=$2 CAP=$3 C0=$4
trap 'exit 0' TERM
exec 4<>/proc/self/fd/0 0</dev/null || exit 1  # Linux: a pipe reopened read-write
now_ms() { read -r up rest < /proc/uptime; NOW=$((10#${up/./} * 10)); }
watch=1
[ "$CAP" = unlimited ] || [ "$C0" = -1 ] && watch=0
now_ms; END=$((NOW + 10#${WALL/./}))
while :; do
  now_ms; left=$((END - NOW))
  [ $left -gt 0 ] || { kill -USR1 "$SUP"; exit 0; }
  [ $watch = 1 ] && [ $left -gt 50 ] && left=50
  printf -v t '%d.%03d' $((left / 1000)) $((left % 1000))
  read -r -t "$t" -u 4 _
  [ $watch = 1 ] || continue
  cpu_ns
  [ $((C - C0)) -gt "$CAP" ] && { kill -USR2 "$SUP"; exit 0; }
done
"""
)

SUPERVISOR_SH = (
    REAP_FUNCTION
    + CPU_FUNCTION
    + r"""
U=$1 WALL=$2 CPU_CAP=$3 RO_DIRS=$4 JOB_SH=$5 WIPE_SH=$6 WATCH_SH=$7; shift 7
umask 022
IFS=' ' read -r NONCE RO_LEN JOB_LEN || exit 120
if [ "$RO_LEN" -gt 0 ]; then
  head -c "$RO_LEN" | tar -x -f - -C / --no-same-owner -m 2>/dev/null || exit 121
fi

cgroup() {  # sets C (cpu ns), O (oom kills), P (refused forks); -1 where unreadable
  cpu_ns; O=-1 P=-1
  for f in /sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/memory.events; do
    [ -r "$f" ] || continue
    while read -r k v; do [ "$k" = oom_kill ] && O=$v; done < "$f"
    break
  done
  for f in /sys/fs/cgroup/pids/pids.events /sys/fs/cgroup/pids.events; do
    [ -r "$f" ] || continue
    while read -r k v; do [ "$k" = max ] && P=$v; done < "$f"
    break
  done
}

cgroup; C0=$C O0=$O P0=$P
TO=0 CX=0 CAP=-1
trap 'TO=1' USR1
trap 'CX=1' USR2
if command -v bash >/dev/null 2>&1; then  # forks only here, before the job exists
  [ "$C0" = -1 ] || CAP=0
  : | bash -c "$WATCH_SH" rlv-watch $$ "$WALL" "$CPU_CAP" "$C0" 2>/dev/null &
else
  ( trap 'kill $S 2>/dev/null; exit 0' TERM
    sleep "$WALL" & S=$!
    wait $S && kill -USR1 $$ ) 2>/dev/null &
fi
T=$!
exec 3<&0
setpriv --reuid="$U" --regid="$U" --clear-groups --inh-caps=-all \
  sh -c "$JOB_SH" sh "$JOB_LEN" "$@" <&3 3<&- &
J=$!
exec 3<&- 0</dev/null
wait $J 2>/dev/null; ST=$?
if [ $((TO + CX)) -gt 0 ] && [ $ST -gt 128 ]; then
  [ $CX = 1 ] && CAP=1
  reap; wait $J 2>/dev/null; s=$?; [ $s = 127 ] || ST=$s
fi
kill $T 2>/dev/null; wait $T 2>/dev/null
CLEAN=1
reap || CLEAN=0
w=0
until setpriv --reuid="$U" --regid="$U" --clear-groups --inh-caps=-all sh -c "$WIPE_SH" \
  2>/dev/null; do
  w=$((w + 1)); [ $w -gt 50 ] && { CLEAN=0; break; }; reap
done
reap || CLEAN=0
IFS=:
for d in $RO_DIRS; do rm -rf "$d"/* "$d"/.[!.]* "$d"/..?* 2>/dev/null; done
unset IFS
cgroup
delta() { if [ "$1" = -1 ] || [ "$2" = -1 ]; then D=-1; else D=$(($2 - $1)); fi; }
delta "$C0" "$C"; DC=$D; delta "$O0" "$O"; DO=$D; delta "$P0" "$P"; DP=$D
printf '\n%s %s %s %s %s %s %s %s\n' "$NONCE" "$ST" "$TO" "$CAP" "$DC" "$DO" "$DP" "$CLEAN" >&2
"""
)


@dataclass(frozen=True)
class Report:
    """What the supervisor saw; ``None`` fields where the cgroup was not readable."""

    status: int  # the job's exit status, shell style (128+N for signal N)
    timed_out: bool
    cpu_capped: bool | None  # killed for its CPU total; None: not watched (RLIMIT_CPU only)
    clean: bool  # every process of the job was killed and its files wiped
    cpu_s: float | None
    oom_kills: int | None
    pids_refused: int | None


def tar_of(files: Mapping[str, bytes], *, mode: int, uid: int) -> bytes:
    """An uncompressed tar of ``files`` (relative names), each with ``mode``; empty when none."""
    if not files:
        return b""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.uid, info.gid = len(data), mode, uid, uid
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def cpu_cap(limits: Limits) -> str:
    """The job's CPU budget in ns for ``WATCH_SH``, or ``unlimited``."""
    return "unlimited" if limits.cpu_s >= UNLIMITED_CPU_S else str(max(1, int(limits.cpu_s * 1e9)))


def rlimit_args(limits: Limits) -> list[str]:
    """``CPU FSIZE NOFILE`` for ``JOB_SH`` (``ulimit -f`` counts 512-byte blocks)."""
    cpu = "unlimited" if limits.cpu_s >= UNLIMITED_CPU_S else str(max(1, math.ceil(limits.cpu_s)))
    blocks = max(1, -(-limits.file_bytes // 512))
    return [cpu, str(blocks), str(limits.open_files)]


def command(
    argv: list[str],
    env: Mapping[str, str],
    limits: Limits,
    ro_dirs: tuple[str, ...],
    timer_s: float,
) -> list[str]:
    """The exec's argv: the supervisor (its watcher kills the job after ``timer_s`` or past
    ``limits.cpu_s`` of CPU), then the job's (under ``env -i`` with ``env``)."""
    wall = f"{max(timer_s, 0.001):.3f}"
    job = ["env", "-i", *(f"{k}={v}" for k, v in env.items()), *argv]
    supervisor = ["/bin/sh", "-c", SUPERVISOR_SH, "rlv-supervisor", str(JOB_UID), wall]
    scripts = [":".join(ro_dirs), JOB_SH, WIPE_SH, WATCH_SH]
    return [*supervisor, cpu_cap(limits), *scripts, *rlimit_args(limits), *job]


def stdin_payload(ro_tar: bytes, job_tar: bytes, stdin: bytes) -> tuple[str, bytes]:
    """(nonce, everything the exec's stdin receives)."""
    nonce = secrets.token_hex(16)
    header = f"{nonce} {len(ro_tar)} {len(job_tar)}\n".encode()
    return nonce, header + ro_tar + job_tar + stdin


def parse_report(stderr_tail: bytes, nonce: str) -> tuple[Report, int] | None:
    """The report and its length in bytes, if ``stderr_tail`` ends with one for ``nonce``."""
    marker = f"\n{nonce} ".encode()
    at = stderr_tail.rfind(marker)
    if at < 0 or not stderr_tail.endswith(b"\n"):
        return None
    fields = stderr_tail[at + len(marker) : -1].split()
    if len(fields) != 7:
        return None
    try:
        status, timed_out, capped, cpu_ns, oom, pids, clean = (int(f) for f in fields)
    except ValueError:
        return None
    report = Report(
        status=status,
        timed_out=timed_out == 1,
        cpu_capped=capped == 1 if capped >= 0 else None,
        clean=clean == 1,
        cpu_s=cpu_ns / 1e9 if cpu_ns >= 0 else None,
        oom_kills=oom if oom >= 0 else None,
        pids_refused=pids if pids >= 0 else None,
    )
    return report, len(stderr_tail) - at
