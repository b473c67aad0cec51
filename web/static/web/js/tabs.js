/*
 * RL Arena code tabs (the guide's languages), following the WAI-ARIA tabs pattern.
 * Markup: <div data-tabs> holding <section class="tab-panel" id=… data-tab-label="Python"> panels, each
 * with its own heading. Without JavaScript every panel shows, one after the other, under its heading.
 * With it, a tablist of buttons is put before the panels and one panel shows at a time: Tab enters the
 * tablist on the selected tab, ←/→ move between tabs (and select them), Home/End go to the first/last,
 * Tab again goes into the panel. The choice is remembered (localStorage) for the next visit.
 */
(function () {
  "use strict";

  var KEY = "rl-arena-code-tab";

  function remembered() {
    try { return window.localStorage.getItem(KEY); } catch (e) { return null; }
  }

  function remember(label) {
    try { window.localStorage.setItem(KEY, label); } catch (e) { /* private mode: not kept */ }
  }

  function Tabs(root, index) {
    var self = this;
    this.panels = Array.prototype.slice.call(root.querySelectorAll(":scope > .tab-panel"));
    this.tabs = [];
    var list = document.createElement("div");
    list.setAttribute("role", "tablist");
    list.setAttribute("aria-label", root.getAttribute("data-tabs-label") || "Language");
    list.className = "tablist";
    this.panels.forEach(function (panel, i) {
      var tab = document.createElement("button");
      tab.type = "button";
      tab.id = "tab-" + index + "-" + i;
      tab.className = "tab";
      tab.setAttribute("role", "tab");
      tab.setAttribute("aria-controls", panel.id);
      tab.setAttribute("data-testid", "tab-" + panel.id);
      tab.textContent = panel.getAttribute("data-tab-label");
      tab.addEventListener("click", function () { self.select(i, false); });
      tab.addEventListener("keydown", function (ev) { self.key(ev, i); });
      list.appendChild(tab);
      self.tabs.push(tab);
      panel.setAttribute("role", "tabpanel");
      panel.setAttribute("aria-labelledby", tab.id);
      panel.setAttribute("tabindex", "0");
      var heading = panel.querySelector(".tab-heading");
      if (heading) heading.hidden = true;  // the tab names it now
    });
    root.insertBefore(list, root.firstChild);
    root.classList.add("tabs-ready");
    var wanted = remembered();
    var start = 0;
    this.panels.forEach(function (panel, i) {
      if (panel.getAttribute("data-tab-label") === wanted) start = i;
    });
    this.select(start, false, true);
  }

  Tabs.prototype.select = function (n, focus, initial) {
    this.tabs.forEach(function (tab, i) {
      var on = i === n;
      tab.setAttribute("aria-selected", on ? "true" : "false");
      tab.tabIndex = on ? 0 : -1;
    });
    this.panels.forEach(function (panel, i) { panel.hidden = i !== n; });
    if (focus) this.tabs[n].focus();
    if (!initial) remember(this.panels[n].getAttribute("data-tab-label"));
  };

  Tabs.prototype.key = function (ev, i) {
    var last = this.tabs.length - 1;
    var target = null;
    if (ev.key === "ArrowRight") target = i === last ? 0 : i + 1;
    else if (ev.key === "ArrowLeft") target = i === 0 ? last : i - 1;
    else if (ev.key === "Home") target = 0;
    else if (ev.key === "End") target = last;
    if (target === null) return;
    ev.preventDefault();
    this.select(target, true);
  };

  function init() {
    var roots = document.querySelectorAll("[data-tabs]");
    for (var i = 0; i < roots.length; i++) roots[i].rlTabs = new Tabs(roots[i], i);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
