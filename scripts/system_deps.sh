#!/usr/bin/env bash
# Installs the system packages AgentClash uses, when it can (root with apt). Never fatal by itself:
# without bubblewrap, sandboxed subprocess tools refuse to run and say so; without a C compiler,
# `make setup` fails next, because it builds the native sandbox launcher (every sandbox's PID 1).
set -u
need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
# gcc builds engine/sandbox/launcher.c; libc6-dev has the headers and the static libc it links.
if ! command -v cc >/dev/null 2>&1 && ! command -v gcc >/dev/null 2>&1 && ! command -v clang >/dev/null 2>&1; then
  need+=(gcc libc6-dev)
fi
if [[ ${INSTALL_CHROMIUM:-0} == 1 ]]; then command -v chromium >/dev/null 2>&1 || need+=(chromium); fi
[[ ${#need[@]} -eq 0 ]] && exit 0
if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing ${need[*]} with apt-get…"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}") >/dev/null 2>&1 \
    || echo "warning: could not install ${need[*]}; install them yourself (sandboxed tools need bubblewrap and a C compiler; browser tests need chromium)" >&2
else
  echo "note: ${need[*]} not installed; install them (e.g. sudo apt-get install ${need[*]}): sandboxed subprocess tools need bubblewrap, and make setup needs a C compiler to build the sandbox launcher" >&2
fi
exit 0
