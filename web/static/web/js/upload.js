/*
 * Upload page: refuse a zip over the size limit before sending it (the server refuses it too, with a 413,
 * but only after the browser has sent every byte). The limit comes from the file input's data-max-bytes.
 */
(function () {
  "use strict";

  function megabytes(n) { return (n / (1024 * 1024)).toFixed(n < 10 * 1024 * 1024 ? 1 : 0); }

  function init() {
    var input = document.querySelector("input[type=file][data-max-bytes]");
    if (!input) return;
    var limit = parseInt(input.getAttribute("data-max-bytes"), 10);
    var form = input.form;
    var message = document.createElement("div");
    message.setAttribute("role", "alert");
    message.className = "errorlist";
    message.setAttribute("data-testid", "upload-size-error");
    message.hidden = true;
    input.insertAdjacentElement("afterend", message);

    function tooLarge() {
      var file = input.files && input.files[0];
      return file && file.size > limit ? file : null;
    }
    function check() {
      var file = tooLarge();
      message.hidden = !file;
      message.textContent = file
        ? file.name + " is " + megabytes(file.size) + " MB: the limit is " + megabytes(limit) +
          " MB. Leave out training data and caches, or shrink the model."
        : "";
      input.closest(".field") && input.closest(".field").classList.toggle("has-error", !!file);
      return !file;
    }
    input.addEventListener("change", check);
    if (form) {
      form.addEventListener("submit", function (event) {
        if (!check()) { event.preventDefault(); input.focus(); }
      });
    }
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
