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

# Pinned, so that every operator builds with the same tools; installed again when these change.
sam_version=1.170.0
cargo_lambda_version=1.9.2
if [ ! -x "$venv/bin/sam" ] || [ ! -x "$venv/bin/cargo-lambda" ] \
   || ! "$venv/bin/python" -c "import importlib.metadata as m, sys
sys.exit(m.version('aws-sam-cli') != '$sam_version' or m.version('cargo-lambda') != '$cargo_lambda_version')" 2>/dev/null; then
  echo "== installing aws-sam-cli $sam_version and cargo-lambda $cargo_lambda_version into $venv"
  [ -x "$venv/bin/pip" ] || python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q "aws-sam-cli==$sam_version" "cargo-lambda==$cargo_lambda_version"
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
start=$(date +%s)
sam build "${sam_args[@]}" --build-dir "$build_dir" --parameter-overrides "Architecture=$arch"
end=$(date +%s)

echo
echo "== $arch: built in $((end - start)) s"
# Functions build one after another: each one's time runs from the previous bootstrap
# (or the start) to its own. The first also compiles the dependencies they share.
python3 - "$start" "$build_dir" <<'PY'
import io, os, sys, zipfile

start, build_dir = int(sys.argv[1]), sys.argv[2]
built = []
for name in os.listdir(build_dir):
    path = os.path.join(build_dir, name, "bootstrap")
    if os.path.isfile(path):
        built.append((os.path.getmtime(path), name, path))
built.sort()

print(f"{'function':<24} {'build s':>8} {'bootstrap':>12} {'zipped':>12}")
previous, total_zip = start, 0
for mtime, name, path in built:
    buf = io.BytesIO()
    # SAM uploads each function as a deflated zip of its build directory.
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.write(path, "bootstrap")
    size, zipped = os.path.getsize(path), len(buf.getvalue())
    total_zip += zipped
    print(f"{name:<24} {mtime - previous:>8.0f} {size / 1e6:>9.2f} MB {zipped / 1e6:>9.2f} MB")
    previous = mtime
print(f"{'all functions':<24} {'':>8} {'':>12} {total_zip / 1e6:>9.2f} MB")
PY
