// The post step of tether's test JavaScript action: reads the state the
// main step saved (STATE_<name>) and reports it as an output.
'use strict';
const fs = require('fs');

const saved = process.env.STATE_saved || '';
process.stdout.write(`js-action post: saved=${saved}\n`);
fs.appendFileSync(process.env.GITHUB_OUTPUT, `post-saved=${saved}\n`);
