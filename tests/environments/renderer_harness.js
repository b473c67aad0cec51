/*
 * Runs a game's renderer in Node against a tiny DOM stand-in, for tests/environments/test_renderers.py.
 *
 * usage: node renderer_harness.js <bootstrap renderers.js> <renderer.js> <slug> <states.json> [options JSON]
 * prints JSON: one report per state {markup, markup_again, state_unchanged, classes, actions}
 * where `actions` is every action emitted through options.onAction by clicking any clickable element,
 * then any clickable element again (covers two-step choices such as Quarto's cell then piece).
 */
"use strict";
const fs = require("fs");
const vm = require("vm");

class Node {
  constructor(tag) {
    this.tag = tag;
    this.attrs = {};
    this.children = [];
    this.parent = null;
    this.listeners = {};
    this._text = "";
  }
  setAttribute(k, v) { this.attrs[k] = String(v); }
  getAttribute(k) { return Object.prototype.hasOwnProperty.call(this.attrs, k) ? this.attrs[k] : null; }
  appendChild(child) {
    if (child.parent) child.parent.removeChild(child);
    child.parent = this;
    this.children.push(child);
    return child;
  }
  removeChild(child) {
    this.children = this.children.filter((c) => c !== child);
    child.parent = null;
    return child;
  }
  get firstChild() { return this.children[0] || null; }
  set textContent(v) { this.children = []; this._text = String(v); }
  get textContent() { return this._text + this.children.map((c) => c.textContent).join(""); }
  set innerHTML(v) { if (v !== "") throw new Error("renderers must not use innerHTML"); this.children = []; this._text = ""; }
  addEventListener(type, fn) { (this.listeners[type] = this.listeners[type] || []).push(fn); }
  fire(type, ev) { (this.listeners[type] || []).forEach((fn) => fn(ev || { key: "Enter", preventDefault() {} })); }
  serialize() {
    const attrs = Object.keys(this.attrs).sort().map((k) => ` ${k}="${this.attrs[k]}"`).join("");
    return `<${this.tag}${attrs}>${this._text}${this.children.map((c) => c.serialize()).join("")}</${this.tag}>`;
  }
  all() { return [this].concat(...this.children.map((c) => c.all())); }
}

const [bootstrap, rendererPath, slug, statesPath, extraOptions] = process.argv.slice(2);
const sandbox = {
  console,
  document: {
    createElementNS: (_ns, tag) => new Node(tag),
    createElement: (tag) => new Node(tag),
  },
};
sandbox.window = sandbox;
vm.createContext(sandbox);
vm.runInContext(fs.readFileSync(bootstrap, "utf8"), sandbox, { filename: bootstrap });
vm.runInContext(fs.readFileSync(rendererPath, "utf8"), sandbox, { filename: rendererPath });
const render = sandbox.RLArenaRenderers[slug];
if (typeof render !== "function") throw new Error(`renderer.js did not register RLArenaRenderers["${slug}"]`);

const states = JSON.parse(fs.readFileSync(statesPath, "utf8"));
const reports = states.map((state) => {
  const before = JSON.stringify(state);
  const options = { players: ["alice", "bob"], first_player: "PLAYER_1", ...JSON.parse(extraOptions || "{}") };
  const container = new Node("div");
  container.appendChild(new Node("old-content"));
  render(container, state, options);
  const markup = container.serialize();
  const again = new Node("div");
  render(again, state, options);
  const classes = [...new Set(container.all().flatMap((n) => (n.getAttribute("class") || "").split(/\s+/)).filter(Boolean))];

  const actions = new Set();
  const interactive = { ...options, onAction: (a) => actions.add(a) };
  const probe = new Node("div");
  render(probe, state, interactive);
  const count = probe.all().filter((n) => (n.getAttribute("class") || "").includes("rl-clickable")).length;
  for (let i = 0; i < count; i++) {
    for (let j = 0; j < count; j++) {
      const fresh = new Node("div");
      render(fresh, state, interactive);
      const clickables = fresh.all().filter((n) => (n.getAttribute("class") || "").includes("rl-clickable"));
      clickables[i].fire("click");
      clickables[j].fire("click");
    }
  }
  return {
    markup,
    markup_again: again.serialize(),
    state_unchanged: JSON.stringify(state) === before,
    kept_old_content: markup.includes("<old-content"),
    classes,
    actions: [...actions].sort((a, b) => a - b),
  };
});
process.stdout.write(JSON.stringify(reports));
