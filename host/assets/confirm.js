// Asks before a form marked `data-confirm` is sent (Unlink, and other
// changes a person cannot take back from the page they land on).
document.addEventListener('submit', (event) => {
  const form = event.target;
  const question = form instanceof HTMLFormElement ? form.dataset.confirm : undefined;
  if (question && !window.confirm(question)) {
    event.preventDefault();
  }
});
