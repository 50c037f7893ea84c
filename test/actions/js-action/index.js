// The main step of tether's test JavaScript action: reads its inputs the
// way @actions/core does (INPUT_<NAME>, upper case, spaces as _), prints a
// line in two pieces and one to stderr, writes GITHUB_OUTPUT, GITHUB_ENV
// and GITHUB_STATE, optionally prints numbered lines over time, and exits
// with the code its exit-code input names.
'use strict';
const fs = require('fs');

const input = (name) => (process.env[`INPUT_${name.replace(/ /g, '_').toUpperCase()}`] || '').trim();
const message = input('message');
const code = parseInt(input('exit-code') || '0', 10);
const ticks = parseInt(input('ticks') || '0', 10);

process.stdout.write('js-action: part one, ');
process.stdout.write(`part two: ${message}\n`);
process.stderr.write(`js-action: on stderr: ${message}\n`);
process.stdout.write(`js-action: node ${process.version} at ${process.argv0}, action path ${process.env.GITHUB_ACTION_PATH}\n`);
fs.appendFileSync(process.env.GITHUB_OUTPUT, `greeting=hello ${message}\n`);
fs.appendFileSync(process.env.GITHUB_ENV, `JS_ACTION_MESSAGE=${message}\n`);
fs.appendFileSync(process.env.GITHUB_STATE, `saved=${message}\n`);

let n = 0;
const finish = () => {
  process.stdout.write('js-action: no newline at the end');
  process.exitCode = code;
};
if (ticks > 0) {
  const timer = setInterval(() => {
    n++;
    process.stdout.write(`tick ${n}\n`);
    if (n >= ticks) {
      clearInterval(timer);
      finish();
    }
  }, 200);
} else {
  finish();
}
