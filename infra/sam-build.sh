#!/usr/bin/env bash
# Builds every function of template.yaml the way `sam deploy` ships them, without Docker:
# installs aws-sam-cli and cargo-lambda (which brings zig for cross-linking) into
# <tools>/lambda-venv when missing, adds the Rust target, runs `sam validate --lint` and
# `sam build`, then prints how long the build took and each function's bootstrap size,
# plain and zipped.
#
#   infra/sam-build.sh            # arm64 (the template's default), into .aws-sam/build-arm64
#   infra/sam-build.sh x86_64     # x86_64, into .aws-sam/build-x86_64
#
# Settings come from infra/samconfig.toml, environment ${PADDOCK_SAM_ENV:-dev}. Release
# builds use fat LTO and one codegen unit per binary: expect tens of minutes on two cores.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
tools=${PADDOCK_TOOLS_DIR:-$HOME/.cache/paddock-tools}
venv="$tools/lambda-venv"
arch=${1:-arm64}
config_env=${PADDOCK_SAM_ENV:-dev}

case "$arch" in
  arm64) target=aarch64-unknown-linux-gnu ;;
  x86_64) target=x86_64-unknown-linux-gnu ;;
  *) echo "usage: $0 [arm64|x86_64]" >&2; exit 2 ;;
esac

if [ ! -x "$venv/bin/sam" ] || [ ! -x "$venv/bin/cargo-lambda" ]; then
  echo "== installing aws-sam-cli and cargo-lambda into $venv"
  [ -x "$venv/bin/pip" ] || python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q aws-sam-cli cargo-lambda
fi
if ! rustup target list --installed | grep -qx "$target"; then
  rustup target add "$target"
fi
export PATH="$venv/bin:$PATH" SAM_CLI_TELEMETRY=0

cd "$root"
build_dir=".aws-sam/build-$arch"
sam_args=(--config-file infra/samconfig.toml --config-env "$config_env")

echo "== sam validate --lint"
sam validate "${sam_args[@]}" --lint

echo "== sam build ($arch, into $build_dir)"
log=$(mktemp)
start=$(date +%s)
set +e
# Each output line is stamped with the second it appeared, so the time between one
# function's "Building codeuri" line and the next is that function's build.
sam build "${sam_args[@]}" --build-dir "$build_dir" --parameter-overrides "Architecture=$arch" 2>&1 \
  | while IFS= read -r line; do printf '%(%s)T %s\n' -1 "$line"; done | tee "$log" | cut -d' ' -f2-
status=${PIPESTATUS[0]}
set -e
end=$(date +%s)
if [ "$status" -ne 0 ]; then
  echo "sam build failed after $((end - start)) s (exit $status)" >&2
  exit "$status"
fi

echo
echo "== $arch: built in $((end - start)) s"
python3 - "$log" "$end" "$build_dir" <<'PY'
import io, os, re, sys, zipfile

log, end, build_dir = sys.argv[1], int(sys.argv[2]), sys.argv[3]
starts = []
for line in open(log):
    stamp, _, text = line.partition(" ")
    m = re.search(r"Building codeuri: .* functions: (\S+)", text)
    if m:
        starts.append((m.group(1), int(stamp)))
took = {name: (starts[i + 1][1] if i + 1 < len(starts) else end) - t
        for i, (name, t) in enumerate(starts)}

print(f"{'function':<24} {'build s':>8} {'bootstrap':>12} {'zipped':>12}")
total_zip = 0
for name in sorted(os.listdir(build_dir)):
    path = os.path.join(build_dir, name, "bootstrap")
    if not os.path.isfile(path):
        continue
    buf = io.BytesIO()
    # SAM uploads each function as a deflated zip of its build directory.
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.write(path, "bootstrap")
    size, zipped = os.path.getsize(path), len(buf.getvalue())
    total_zip += zipped
    print(f"{name:<24} {took.get(name, 0):>8} {size / 1e6:>9.2f} MB {zipped / 1e6:>9.2f} MB")
print(f"{'all functions':<24} {'':>8} {'':>12} {total_zip / 1e6:>9.2f} MB")
PY
rm -f "$log"
