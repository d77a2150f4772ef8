// The chosen file goes into the text box, which the form sends.
document.getElementById("metadata_file").addEventListener("change", function (e) {
  var file = e.target.files[0];
  if (!file) { return; }
  file.text().then(function (text) { document.getElementById("METADATA").value = text; });
});
