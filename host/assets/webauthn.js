// WebAuthn in the browser: the one place the pages need script. A form with
// data-webauthn="create" or "get" carries the server's options (JSON) in
// data-options; on submit the browser asks the key, puts its answer (JSON,
// binary fields base64url) into the form's "credential" field and submits.
(function () {
  function toBuffer(s) {
    s = s.replace(/-/g, '+').replace(/_/g, '/');
    while (s.length % 4) s += '=';
    var bin = atob(s), out = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out.buffer;
  }
  function toText(buf) {
    var bytes = new Uint8Array(buf), bin = '';
    for (var i = 0; i < bytes.length; i++) bin += String.fromCharCode(bytes[i]);
    return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  }
  function withIds(list) {
    return (list || []).map(function (c) { return Object.assign({}, c, { id: toBuffer(c.id) }); });
  }
  async function create(options) {
    var pk = options.publicKey;
    pk.challenge = toBuffer(pk.challenge);
    pk.user.id = toBuffer(pk.user.id);
    pk.excludeCredentials = withIds(pk.excludeCredentials);
    var cred = await navigator.credentials.create({ publicKey: pk });
    var r = cred.response;
    return {
      id: cred.id, rawId: toText(cred.rawId), type: cred.type,
      response: {
        attestationObject: toText(r.attestationObject),
        clientDataJSON: toText(r.clientDataJSON),
        transports: r.getTransports ? r.getTransports() : []
      },
      extensions: cred.getClientExtensionResults()
    };
  }
  async function get(options) {
    var pk = options.publicKey;
    pk.challenge = toBuffer(pk.challenge);
    pk.allowCredentials = withIds(pk.allowCredentials);
    var cred = await navigator.credentials.get({ publicKey: pk });
    var r = cred.response;
    return {
      id: cred.id, rawId: toText(cred.rawId), type: cred.type,
      response: {
        authenticatorData: toText(r.authenticatorData),
        clientDataJSON: toText(r.clientDataJSON),
        signature: toText(r.signature),
        userHandle: r.userHandle ? toText(r.userHandle) : null
      },
      extensions: cred.getClientExtensionResults()
    };
  }
  document.querySelectorAll('form[data-webauthn]').forEach(function (form) {
    form.addEventListener('submit', async function (event) {
      event.preventDefault();
      var status = form.querySelector('.webauthn-status');
      try {
        var options = JSON.parse(form.dataset.options);
        var answer = form.dataset.webauthn === 'create' ? await create(options) : await get(options);
        form.elements.credential.value = JSON.stringify(answer);
        form.submit();
      } catch (e) {
        status.textContent = 'The key did not answer: ' + e.message;
      }
    });
  });
})();
