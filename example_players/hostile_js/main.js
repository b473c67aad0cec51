// Hostile JavaScript agent for the tests: misbehaves as the ARENA_HOSTILE environment variable says, on its
// first move (the test passes it through the launch spec):
//   crash      process.abort() (SIGABRT)                           -> CRASH
//   throw      throws an Error (an `error` message)                -> CRASH
//   timeout    spins forever                                       -> TIMEOUT
//   flood      returns a 10 MB string (one endless protocol line)  -> OUTPUT_LIMIT
//   malformed  writes a line that is not JSON on the protocol socket -> BAD_OUTPUT
//   illegal    returns an action that is not valid                 -> INVALID_ACTION
//   stdout     prints 4 MB with console.log, then plays fine (its output lands in the capped log)
'use strict';

const fs = require('fs');

function protocolFd() {
  for (let fd = 3; fd < 64; fd += 1) {
    try {
      if (fs.fstatSync(fd).isSocket()) return fd;
    } catch (err) {
      // not open
    }
  }
  return -1;
}

class Player {
  start(state, validActions) {
    return this.misbehave(validActions);
  }

  step(state, validActions) {
    return this.misbehave(validActions);
  }

  misbehave(validActions) {
    const mode = process.env.ARENA_HOSTILE || '';
    if (mode === 'crash') process.abort();
    if (mode === 'throw') throw new Error('hostile: thrown on purpose');
    if (mode === 'timeout') for (;;);
    if (mode === 'flood') return 'x'.repeat(10 * 1024 * 1024);
    if (mode === 'malformed') {
      fs.writeSync(protocolFd(), 'this is not json\n');
      for (;;);
    }
    if (mode === 'illegal') return -12345;
    if (mode === 'stdout') {
      const line = 'o'.repeat(1023);
      for (let i = 0; i < 4096; i += 1) console.log(line);
    }
    return validActions[0];
  }
}

module.exports = Player;
