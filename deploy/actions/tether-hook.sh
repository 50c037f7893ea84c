#!/bin/bash
# The GitHub Actions runner's container hook launcher for Tether.
#
# The runner accepts only a .sh, .js or .ps1 file in
# ACTIONS_RUNNER_CONTAINER_HOOKS; it runs a .sh file with `bash -e`, writes
# one JSON line on its stdin and closes it. This launcher hands stdin,
# stdout, stderr and the environment to `tether actions` unchanged.
# TETHER_ACTIONS_BIN names the tether binary (default: tether on PATH).
exec "${TETHER_ACTIONS_BIN:-tether}" actions
