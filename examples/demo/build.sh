#!/bin/sh
# A build step that shows progress without newlines: each dot is forwarded
# as soon as it is printed, not at the end of the line.
printf 'compiling'
for i in 1 2 3 4 5 6; do
  printf '.'
  sleep 0.25
done
echo ' done'
# A progress bar redrawn with carriage returns survives byte for byte.
for pct in 25 50 75 100; do
  printf '\rpackaging %3d%%' "$pct"
  sleep 0.1
done
printf '\n'
