/*
 * RL Arena guide: the side navigation marks the section being read (aria-current="location") as the page
 * scrolls. Without JavaScript (or IntersectionObserver) the links simply work, unmarked.
 */
(function () {
  "use strict";

  function init() {
    var nav = document.querySelector("[data-testid=guide-nav]");
    if (!nav || !("IntersectionObserver" in window)) return;
    var links = {};
    nav.querySelectorAll("a[href^='#']").forEach(function (a) { links[a.getAttribute("href").slice(1)] = a; });
    var headings = [];
    Object.keys(links).forEach(function (id) {
      var h = document.getElementById(id);
      if (h) headings.push(h);
    });
    var visible = {};
    function mark() {
      var current = null;
      for (var i = 0; i < headings.length; i++) {  // the first section whose heading is in view, else the
        if (visible[headings[i].id]) { current = headings[i].id; break; }  // last one scrolled past
        if (headings[i].getBoundingClientRect().top < 0) current = headings[i].id;
      }
      Object.keys(links).forEach(function (id) {
        if (id === current) links[id].setAttribute("aria-current", "location");
        else links[id].removeAttribute("aria-current");
      });
    }
    var observer = new IntersectionObserver(function (entries) {
      entries.forEach(function (e) { visible[e.target.id] = e.isIntersecting; });
      mark();
    }, { rootMargin: "-72px 0px -40% 0px" });
    headings.forEach(function (h) { observer.observe(h); });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
