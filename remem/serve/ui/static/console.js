// The console's only script: it makes the as_of slider show its date and submit itself,
// and asks before a form marked data-confirm is sent. Every page works without it.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  for (const slider of document.querySelectorAll("input[data-times]")) {
    const times = JSON.parse(slider.dataset.times);
    const label = document.getElementById(slider.dataset.label);
    const show = () => { if (label) label.textContent = times[Number(slider.value)] || ""; };
    slider.addEventListener("input", show);
    slider.addEventListener("change", () => slider.form.requestSubmit());
    show();
  }
  for (const form of document.querySelectorAll("form[data-confirm]")) {
    form.addEventListener("submit", (event) => {
      if (!window.confirm(form.dataset.confirm)) event.preventDefault();
    });
  }
});
