#!/bin/sh
# An after-script: runs whether the main scripts failed or not.
echo 'cleanup: removing the build directory'
