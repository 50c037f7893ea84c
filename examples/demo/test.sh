#!/bin/sh
# A test step that fails. It also prints the kind of JSON status line other
# runners parse to find the exit code: with tether it is just output.
echo 'running 3 tests'
echo 'ok    parser'
echo 'ok    encoder'
echo 'FAIL  integration: expected 42, got 41' >&2
echo '{"command_exit_code": 0, "script": "test.sh"}'
exit 3
