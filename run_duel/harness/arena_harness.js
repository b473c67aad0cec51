// RL Arena harness for JavaScript agents (Node.js, no dependencies). Ours, not the user's: copied into
// every JavaScript agent image. Usage:
//
//   node arena_harness.js --agent-dir DIR [--connect UNIX_SOCKET_PATH]
//
// It requires DIR/main.js, which exports a Player class (`module.exports = Player` or
// `module.exports = { Player }`) with start(state, validActions), step(state, validActions, reward) and
// optionally end(state, reward); each may return a value or a Promise of one. `state` is the game's
// observation as nested arrays of numbers, `validActions` an array of ints.
//
// The protocol (docs/PROTOCOL.md: newline-delimited JSON) runs over the Unix socket of --connect (the
// Docker sandbox), else over the original stdin/stdout. console.log and process.stdout go to stderr, so the
// agent's prints never corrupt the protocol. An exception thrown by the player is reported as an `error`
// message and the harness keeps serving; `close` or the end of input ends the process.
'use strict';

const fs = require('fs');
const net = require('net');
const path = require('path');
const readline = require('readline');

const MAX_TRACEBACK = 8000;
const MAX_REPR = 200;
const CONNECT_RETRY_MS = 10000;

function parseArgs(argv) {
  const args = { agentDir: null, connect: null };
  for (let i = 0; i < argv.length; i += 1) {
    if (argv[i] === '--agent-dir') args.agentDir = argv[++i];
    else if (argv[i] === '--connect') args.connect = argv[++i];
  }
  if (!args.agentDir) throw new Error('--agent-dir is required');
  return args;
}

function capTail(text, limit) {
  return text.length <= limit ? text : '...(truncated)...\n' + text.slice(-limit);
}

function errorMessage(err) {
  const name = (err && err.constructor && err.constructor.name) || typeof err;
  let text;
  try {
    text = err && err.stack ? String(err.stack) : String(err);
  } catch (inner) {
    text = `${name} (unprintable)`;
  }
  return JSON.stringify({ type: 'error', exception: name, message: capTail(text, MAX_TRACEBACK) });
}

function encodeAction(action) {
  if (typeof action === 'number' && Number.isFinite(action)) {
    return JSON.stringify({ type: 'action', action });
  }
  if (typeof action === 'string' || typeof action === 'boolean' || action === null) {
    return JSON.stringify({ type: 'action', action });  // the referee judges it (INVALID_ACTION)
  }
  let text;
  try {
    text = String(action);
  } catch (err) {
    text = `<unrepresentable ${typeof action}>`;
  }
  if (text.length > MAX_REPR) text = text.slice(0, MAX_REPR) + '...';
  return JSON.stringify({ type: 'action', action: null, repr: text });
}

// Output of the agent goes to stderr from now on; returns nothing.
function detachStdout() {
  const toStderr = (...args) => process.stderr.write(args.map(String).join(' ') + '\n');
  console.log = toStderr;
  console.info = toStderr;
  console.debug = toStderr;
  process.stdout.write = process.stderr.write.bind(process.stderr);
}

function stdioChannel() {
  detachStdout();  // JavaScript-level output only: fd 1 itself stays the protocol's
  return {
    input: process.stdin,
    write: (line) => fs.writeSync(1, line + '\n'),
    finish: (line) => Promise.resolve(fs.writeSync(1, line + '\n')),
    close: () => {},
  };
}

function socketChannel(socketPath) {
  return new Promise((resolve, reject) => {
    const deadline = Date.now() + CONNECT_RETRY_MS;
    const attempt = () => {
      const sock = net.createConnection(socketPath);
      sock.once('connect', () => {
        sock.removeAllListeners('error');
        sock.on('error', () => process.exit(0));  // the referee went away
        detachStdout();
        resolve({
          input: sock,
          write: (line) => sock.write(line + '\n'),
          finish: (line) => new Promise((done) => sock.end(line + '\n', done)),
          close: () => sock.end(),
        });
      });
      sock.once('error', (err) => {
        if (Date.now() > deadline) reject(err);
        else setTimeout(attempt, 20);
      });
    };
    attempt();
  });
}

function loadPlayer(agentDir) {
  const dir = path.resolve(agentDir);
  process.chdir(dir);
  const exported = require(path.join(dir, 'main.js'));
  const PlayerClass = typeof exported === 'function' ? exported : exported && exported.Player;
  if (typeof PlayerClass !== 'function') {
    throw new TypeError('main.js must export a Player class: module.exports = Player (or { Player })');
  }
  return new PlayerClass(false);
}

async function serve(channel, player) {
  const lines = readline.createInterface({ input: channel.input, crlfDelay: Infinity });
  for await (const line of lines) {
    const msg = JSON.parse(line);
    let reply;
    try {
      if (msg.type === 'start') {
        reply = encodeAction(await player.start(msg.state, msg.valid_actions));
      } else if (msg.type === 'step') {
        reply = encodeAction(await player.step(msg.state, msg.valid_actions, msg.reward));
      } else if (msg.type === 'end') {
        if (typeof player.end === 'function') await player.end(msg.state, msg.reward);
        reply = '{"type":"ended"}';
      } else if (msg.type === 'close') {
        channel.close();
        process.exit(0);
      } else {
        throw new Error(`unknown message type ${JSON.stringify(msg.type)}`);
      }
    } catch (err) {
      reply = errorMessage(err);
    }
    channel.write(reply);
  }
  process.exit(0);
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const channel = args.connect ? await socketChannel(args.connect) : stdioChannel();
  let player;
  try {
    player = loadPlayer(args.agentDir);
  } catch (err) {
    process.stderr.write(String(err && err.stack ? err.stack : err) + '\n');
    await channel.finish(errorMessage(err));
    process.exit(1);
  }
  channel.write('{"type":"ready"}');
  await serve(channel, player);
}

main().catch((err) => {
  process.stderr.write(`arena harness: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
