#!/bin/sh
# The action image's own ENTRYPOINT: says that it ran and with which
# arguments, and sets the step output "entrypoint" to its first argument.
printf 'entrypoint ran in %s with %d args:' "$(pwd)" "$#"
for a in "$@"; do printf ' [%s]' "$a"; done
printf '\n'
echo "entrypoint=$1" >> "$GITHUB_OUTPUT"
