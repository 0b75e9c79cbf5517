#!/usr/bin/env bash
# kernelpilot installer: package (virtualenv), Claude Code skills + slash commands (symlinks), MCP server registration.
#
#   ./install.sh                 install into ./.venv, link skills, register the MCP server with Claude Code
#   ./install.sh --dev           also install test/lint tools (pytest, ruff, mypy, ...)
#   ./install.sh --python PY     install into PY's environment instead of creating a virtualenv
#   ./install.sh --venv DIR      put the virtualenv in DIR (default: <repo>/.venv)
#   ./install.sh --no-mcp        do not register the MCP server
#   ./install.sh --uninstall     remove exactly what an earlier run installed (links it made, its MCP entry,
#                                then the folders it created once they are empty)
#
# Idempotent: a second run changes nothing. It never overwrites a file or directory it did not create;
# what it created is listed in ${CLAUDE_CONFIG_DIR:-$HOME/.claude}/.kernelpilot-install-manifest.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
CLAUDE_DIR="${CLAUDE_CONFIG_DIR:-$HOME/.claude}"
MANIFEST="$CLAUDE_DIR/.kernelpilot-install-manifest"
VENV="$REPO/.venv"
PYTHON_GIVEN=""
DEV=0
UNINSTALL=0
REGISTER_MCP=1
SERVER_NAME="kernelpilot"

die() { echo "install.sh: error: $*" >&2; exit 1; }
say() { echo "install.sh: $*"; }

while [ $# -gt 0 ]; do
  case "$1" in
    --dev) DEV=1 ;;
    --uninstall) UNINSTALL=1 ;;
    --no-mcp) REGISTER_MCP=0 ;;
    --python) [ $# -ge 2 ] || die "--python needs an interpreter path"; PYTHON_GIVEN="$2"; shift ;;
    --python=*) PYTHON_GIVEN="${1#--python=}" ;;
    --venv) [ $# -ge 2 ] || die "--venv needs a directory"; VENV="$2"; shift ;;
    --venv=*) VENV="${1#--venv=}" ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
  shift
done

manifest_has() { [ -f "$MANIFEST" ] && grep -Fxq "$1" "$MANIFEST"; }
manifest_add() { mkdir -p "$CLAUDE_DIR"; manifest_has "$1" || echo "$1" >> "$MANIFEST"; }

# make_dirs DIR...: create each missing folder (and its missing parents) and record every folder made as a
# `dir:` line, outermost first, so --uninstall can remove the ones left empty.
make_dirs() {
  local target p made=()
  for target in "$@"; do
    local missing=()
    p="$target"
    while [ ! -e "$p" ] && [ ! -L "$p" ]; do missing=("$p" ${missing[@]+"${missing[@]}"}); p="$(dirname "$p")"; done
    for p in ${missing[@]+"${missing[@]}"}; do mkdir "$p"; made+=("$p"); done
  done
  for p in ${made[@]+"${made[@]}"}; do manifest_add "dir:$p"; done
}

# A link is ours when it is a symlink resolving into this repository.
is_our_link() { [ -L "$1" ] && case "$(readlink "$1")" in "$REPO"/*) return 0 ;; *) return 1 ;; esac; }

find_claude() { command -v claude 2>/dev/null || true; }

uninstall() {
  local removed=0 line dirs=() i
  if [ -f "$MANIFEST" ]; then
    while IFS= read -r line; do
      case "$line" in
        link:*)
          local path="${line#link:}"
          if is_our_link "$path"; then rm -f "$path"; say "removed $path"; removed=$((removed + 1));
          elif [ -e "$path" ] || [ -L "$path" ]; then say "left $path (no longer a kernelpilot link)"; fi ;;
        mcp:*)
          local claude; claude="$(find_claude)"
          if [ -n "$claude" ]; then
            if "$claude" mcp remove "${line#mcp:}" -s user >/dev/null 2>&1; then say "unregistered MCP server ${line#mcp:}"; fi
          else
            say "claude not on PATH: remove the MCP server '${line#mcp:}' from your host's config by hand"
          fi ;;
        dir:*) dirs+=("${line#dir:}") ;;
      esac
    done < "$MANIFEST"
    rm -f "$MANIFEST"
    # innermost first: a folder this installer made goes once it is empty (the user's files keep it)
    for ((i = ${#dirs[@]} - 1; i >= 0; i--)); do
      if [ -d "${dirs[$i]}" ] && [ ! -L "${dirs[$i]}" ] && [ -z "$(ls -A "${dirs[$i]}")" ]; then
        rmdir "${dirs[$i]}"; say "removed empty folder ${dirs[$i]}"
      fi
    done
  fi
  say "uninstalled ($removed links removed; the virtualenv at $VENV is left in place: delete it to remove the package)"
}

if [ "$UNINSTALL" = 1 ]; then uninstall; exit 0; fi

# 1. The Python package.
if [ -n "$PYTHON_GIVEN" ]; then
  PY="$PYTHON_GIVEN"
  command -v "$PY" >/dev/null 2>&1 || [ -x "$PY" ] || die "--python '$PY' is not an executable interpreter"
else
  if [ ! -x "$VENV/bin/python" ]; then
    HOSTPY="${KERNELPILOT_PYTHON:-python3}"
    command -v "$HOSTPY" >/dev/null 2>&1 || die "python3 not found; install Python >= 3.11 or pass --python"
    "$HOSTPY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' \
      || die "$HOSTPY is older than 3.11; pass --python with a newer interpreter"
    say "creating virtualenv $VENV"
    "$HOSTPY" -m venv "$VENV"
  fi
  PY="$VENV/bin/python"
fi
EXTRAS=""
[ "$DEV" = 1 ] && EXTRAS="[dev]"
STAMP_VALUE="$( (cat "$REPO/pyproject.toml"; echo "extras=$EXTRAS"; echo "repo=$REPO") | cksum | cut -d' ' -f1)"
STAMP_FILE="$("$PY" -c 'import sys; print(sys.prefix)')/.kernelpilot-install-stamp"
if [ -f "$STAMP_FILE" ] && [ "$(cat "$STAMP_FILE")" = "$STAMP_VALUE" ] && "$PY" -c 'import kernelpilot' 2>/dev/null; then
  say "package already installed ($PY): unchanged"
else
  say "installing kernelpilot$EXTRAS into $("$PY" -c 'import sys; print(sys.prefix)')"
  "$PY" -m pip install --quiet --disable-pip-version-check --upgrade pip >/dev/null 2>&1 || true
  "$PY" -m pip install --quiet --disable-pip-version-check -e "$REPO$EXTRAS"
  echo "$STAMP_VALUE" > "$STAMP_FILE"
fi
BIN_DIR="$("$PY" -c 'import sys, sysconfig; print(sysconfig.get_path("scripts"))')"
MCP_CMD="$BIN_DIR/kernelpilot-mcp"
[ -x "$MCP_CMD" ] || die "kernelpilot-mcp not found at $MCP_CMD after install"

# 2. Skills and slash commands: symlinks we create and record; anything else at the target is left alone.
link_one() {  # link_one SOURCE TARGET
  local src="$1" dst="$2"
  if is_our_link "$dst"; then
    if [ "$(readlink "$dst")" = "$src" ]; then manifest_add "link:$dst"; return 0; fi
    ln -sfn "$src" "$dst"; manifest_add "link:$dst"; say "updated $dst"; return 0
  fi
  if [ -e "$dst" ] || [ -L "$dst" ]; then
    say "skipped $dst: it exists and was not created by kernelpilot (left untouched; move it away and re-run to link)"
    return 0
  fi
  ln -s "$src" "$dst"; manifest_add "link:$dst"; say "linked $dst"
}

make_dirs "$CLAUDE_DIR" "$CLAUDE_DIR/skills" "$CLAUDE_DIR/commands"
for dir in "$REPO"/skills/*/; do
  [ -f "$dir/SKILL.md" ] || continue
  name="$(basename "$dir")"
  link_one "${dir%/}" "$CLAUDE_DIR/skills/$name"
done
if [ -d "$REPO/skills/.commands" ]; then
  for cmd in "$REPO"/skills/.commands/*.md; do
    [ -f "$cmd" ] || continue
    link_one "$cmd" "$CLAUDE_DIR/commands/$(basename "$cmd")"
  done
fi

# 3. The MCP server.
SNIPPET="{\"mcpServers\": {\"$SERVER_NAME\": {\"command\": \"$MCP_CMD\", \"args\": []}}}"
if [ "$REGISTER_MCP" = 1 ]; then
  CLAUDE="$(find_claude)"
  if [ -n "$CLAUDE" ]; then
    current="$("$CLAUDE" mcp get "$SERVER_NAME" 2>/dev/null || true)"
    if [ -z "$current" ]; then
      "$CLAUDE" mcp add --scope user "$SERVER_NAME" -- "$MCP_CMD" >/dev/null
      manifest_add "mcp:$SERVER_NAME"
      say "registered MCP server '$SERVER_NAME' with Claude Code (user scope)"
    elif printf '%s' "$current" | grep -Fq "Command: $MCP_CMD"; then
      say "MCP server '$SERVER_NAME' already registered: unchanged"
    else
      say "an MCP server named '$SERVER_NAME' is already registered with another command: left untouched"
    fi
  else
    say "Claude Code CLI not on PATH; register the server yourself:"
    echo "    claude mcp add --scope user $SERVER_NAME -- $MCP_CMD"
    echo "  or put this in your host's .mcp.json:"
    echo "    $SNIPPET"
  fi
fi
say "done. Try: $BIN_DIR/kernelpilot doctor"
