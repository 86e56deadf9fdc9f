#!/usr/bin/env bash
# Installs the system packages AgentClash uses, when it can (root with apt). Never fatal:
# without bubblewrap, sandboxed subprocess tools refuse to run and say so.
set -u
need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
if [[ ${INSTALL_CHROMIUM:-0} == 1 ]]; then command -v chromium >/dev/null 2>&1 || need+=(chromium); fi
[[ ${#need[@]} -eq 0 ]] && exit 0
if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing ${need[*]} with apt-get…"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}") >/dev/null 2>&1 \
    || echo "warning: could not install ${need[*]}; install them yourself for sandboxed tools/browser tests" >&2
else
  echo "note: ${need[*]} not installed; sandboxed subprocess tools will refuse to run until you install it (e.g. sudo apt-get install ${need[*]})" >&2
fi
exit 0
