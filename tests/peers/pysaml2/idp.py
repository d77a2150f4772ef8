"""A SAML 2.0 identity provider built on PyPI's pysaml2 (signing and
encryption by Debian's xmlsec1), for Postern's SAML tests: a second
implementation beside simplesamlphp.

    idp.py PORT DIR

DIR holds the IdP's key.pem and cert.pem. The IdP serves on 127.0.0.1:PORT:

    GET  /metadata      its metadata
    POST /sp            a service provider's metadata XML (the body), loaded
                        while the IdP runs
    POST /rotate?cn=CN  a new signing key and certificate (subject CN) in
                        place of the old, as an IdP's certificate rollover
                        ends: the metadata names the new one alone
    GET  /sso           an AuthnRequest by the HTTP-Redirect binding
                        (SAMLRequest, RelayState; unsigned: simplesamlphp's
                        tests are the ones that check signed requests),
                        answered with the HTTP-POST binding's
                        auto-submitting form
    GET  /unsolicited   an IdP-initiated response to the SP `sp`, with
                        `RelayState`

/sso and /unsolicited take the person and the response's shape from the
query, as an IdP's configuration would fix them (the tests set them per
sign-in; there is no login form):

    login       the NameID and the username claim's value
    email, name, groups (comma-separated)
    claims      entra | oid | okta | keycloak: the attribute names (see CLAIMS)
    nameid      emailAddress | persistent | transient | unspecified
    persistent  the persistent NameID's value (default: a hash of login)
    sign        response | assertion | both | none
    encrypt     an XML Encryption data algorithm's URI: the assertion is
                encrypted to the SP's metadata encryption certificate
    sign_alg    an XML Signature algorithm's URI (default RSA-SHA256; with
                RSA-SHA1 the digest is SHA-1 too)
"""

import base64
import hashlib
import html
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import saml2.entity
from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT
from saml2.assertion import Policy
from saml2.config import IdPConfig
from saml2.saml import (
    NAME_FORMAT_BASIC,
    NAME_FORMAT_UNSPECIFIED,
    NAME_FORMAT_URI,
    NAMEID_FORMAT_EMAILADDRESS,
    NAMEID_FORMAT_PERSISTENT,
    NAMEID_FORMAT_TRANSIENT,
    NAMEID_FORMAT_UNSPECIFIED,
    NameID,
)
from saml2.metadata import create_metadata_string
from saml2.server import Server
from saml2.sigver import pre_encryption_part

# The attribute names each vendor style gives the username, e-mail,
# display name and groups claims, and the NameFormat of the release policy
# (pysaml2 gives a name it has no map for its default NameFormat, uri).
CLAIMS = {
    # Entra ID's (and AD FS's) claim-type URIs.
    "entra": (
        "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/name",
        "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress",
        "http://schemas.microsoft.com/identity/claims/displayname",
        "http://schemas.microsoft.com/ws/2008/06/identity/claims/groups",
        NAME_FORMAT_UNSPECIFIED,
    ),
    # Shibboleth's and the federations' OID names (eduPerson).
    "oid": (
        "urn:oid:0.9.2342.19200300.100.1.1",
        "urn:oid:0.9.2342.19200300.100.1.3",
        "urn:oid:2.16.840.1.113730.3.1.241",
        "urn:oid:1.3.6.1.4.1.5923.1.5.1.1",
        NAME_FORMAT_URI,
    ),
    # Okta's plain names.
    "okta": ("username", "email", "displayName", "groups", NAME_FORMAT_UNSPECIFIED),
    # Keycloak's: plain names in the basic NameFormat (pysaml2 gives the
    # ones it knows their urn:mace names and keeps the plain one as
    # FriendlyName).
    "keycloak": ("username", "email", "displayName", "groups", NAME_FORMAT_BASIC),
}

NAMEID_FORMATS = {
    "emailAddress": NAMEID_FORMAT_EMAILADDRESS,
    "persistent": NAMEID_FORMAT_PERSISTENT,
    "transient": NAMEID_FORMAT_TRANSIENT,
    "unspecified": NAMEID_FORMAT_UNSPECIFIED,
}

LOCK = threading.Lock()


def session_key(algorithm):
    """xmlsec1's --session-key for an XML Encryption data algorithm URI."""
    name = algorithm.rsplit("#", 1)[1]
    if name == "tripledes-cbc":
        return "des-192"
    return f"aes-{name[3:6]}"


def make_key(directory, cn):
    """A new RSA key and self-signed certificate in DIR, by openssl."""
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "365", "-subj", f"/CN={cn}"]
        + ["-keyout", os.path.join(directory, "key.pem"), "-out", os.path.join(directory, "cert.pem")],
        check=True,
        capture_output=True,
    )


def make_server(port, directory):
    base = f"http://127.0.0.1:{port}"
    config = IdPConfig()
    config.load(
        {
            "entityid": f"{base}/metadata",
            "key_file": os.path.join(directory, "key.pem"),
            "cert_file": os.path.join(directory, "cert.pem"),
            "xmlsec_binary": "/usr/bin/xmlsec1",
            "delete_tmpfiles": True,
            "service": {
                "idp": {
                    "endpoints": {
                        "single_sign_on_service": [
                            (f"{base}/sso", BINDING_HTTP_REDIRECT),
                        ],
                    },
                    "name_id_format": list(NAMEID_FORMATS.values()),
                    "policy": {"default": {"lifetime": {"minutes": 5}}},
                },
            },
            "metadata": {},
        }
    )
    return Server(config=config)


class Handler(BaseHTTPRequestHandler):
    idp = None
    port = None
    directory = None
    # The service providers' metadata, loaded again after a rotation.
    sps = []

    def log_message(self, format, *args):
        sys.stderr.write("pysaml2 idp: " + (format % args) + "\n")

    def answer(self, status, body, content_type="text/html; charset=utf-8"):
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        url = urlparse(self.path)
        if url.path == "/rotate":
            cn = parse_qs(url.query).get("cn", ["pysaml2 test IdP"])[0]
            with LOCK:
                make_key(Handler.directory, cn)
                Handler.idp = make_server(Handler.port, Handler.directory)
                for xml in Handler.sps:
                    Handler.idp.metadata.load("inline", xml)
            return self.answer(204, "")
        if url.path != "/sp":
            return self.answer(404, "not found")
        length = int(self.headers.get("Content-Length", "0"))
        xml = self.rfile.read(length).decode("utf-8")
        with LOCK:
            self.idp.metadata.load("inline", xml)
            Handler.sps.append(xml)
        self.answer(204, "")

    def do_GET(self):
        url = urlparse(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        try:
            if url.path == "/metadata":
                with LOCK:
                    xml = create_metadata_string(None, self.idp.config, 4, None, None, None, None, None).decode(
                        "utf-8"
                    )
                return self.answer(200, xml, "application/samlmetadata+xml")
            if url.path == "/sso":
                return self.sso(query)
            if url.path == "/unsolicited":
                return self.respond(query, None, query["sp"], query.get("RelayState", ""))
        except Exception as e:  # the test reads the reason
            return self.answer(400, f"{type(e).__name__}: {e}", "text/plain")
        self.answer(404, "not found")

    def sso(self, query):
        with LOCK:
            request = self.idp.parse_authn_request(
                query["SAMLRequest"], BINDING_HTTP_REDIRECT, relay_state=query.get("RelayState")
            )
        message = request.message
        return self.respond(query, message.id, message.issuer.text, query.get("RelayState", ""))

    def respond(self, query, in_response_to, sp, relay_state):
        login = query["login"]
        username, email, name, groups, name_format = CLAIMS[query.get("claims", "okta")]
        identity = {username: [login]}
        if query.get("email"):
            identity[email] = [query["email"]]
        if query.get("name"):
            identity[name] = [query["name"]]
        if query.get("groups"):
            identity[groups] = query["groups"].split(",")
        nameid_format = NAMEID_FORMATS[query.get("nameid", "unspecified")]
        nameid_value = login
        if nameid_format == NAMEID_FORMAT_PERSISTENT:
            nameid_value = query.get("persistent") or hashlib.sha256(login.encode()).hexdigest()
        elif nameid_format == NAMEID_FORMAT_TRANSIENT:
            nameid_value = "_" + os.urandom(16).hex()
        sign = query.get("sign", "both")
        sign_alg = query.get("sign_alg") or "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256"
        digest_alg = "http://www.w3.org/2001/04/xmlenc#sha256"
        if sign_alg.endswith("sha1"):
            digest_alg = "http://www.w3.org/2000/09/xmldsig#sha1"
        encrypt = query.get("encrypt")
        with LOCK:
            destination = self.idp.metadata.assertion_consumer_service(sp, BINDING_HTTP_POST)[0]["location"]
            policy = Policy({"default": {"lifetime": {"minutes": 5}, "name_form": name_format}}, mds=self.idp.metadata)
            original = saml2.entity.pre_encryption_part
            sec_encrypt = self.idp.sec.encrypt_assertion
            if encrypt:
                # pysaml2 encrypts with 3DES and no way to choose another;
                # the test names the data algorithm, in the template and
                # as xmlsec1's session key.
                saml2.entity.pre_encryption_part = lambda **kw: pre_encryption_part(msg_enc=encrypt, **kw)
                key_type = session_key(encrypt)
                self.idp.sec.encrypt_assertion = lambda statement, key, template, node_xpath=None: sec_encrypt(
                    statement, key, template, key_type, node_xpath
                )
            try:
                response = self.idp.create_authn_response(
                    identity,
                    in_response_to,
                    destination,
                    sp,
                    name_id=NameID(format=nameid_format, text=nameid_value),
                    authn={"class_ref": "urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport"},
                    sign_response=sign in ("response", "both"),
                    sign_assertion=sign in ("assertion", "both"),
                    encrypt_assertion=bool(encrypt),
                    encrypt_assertion_self_contained=True,
                    release_policy=policy,
                    sign_alg=sign_alg,
                    digest_alg=digest_alg,
                )
            finally:
                saml2.entity.pre_encryption_part = original
                self.idp.sec.encrypt_assertion = sec_encrypt
        saml_response = base64.b64encode(str(response).encode("utf-8")).decode("ascii")
        page = (
            "<!DOCTYPE html><html><body onload=\"document.forms[0].submit()\">"
            f"<form method=\"post\" action=\"{html.escape(destination)}\">"
            f"<input type=\"hidden\" name=\"SAMLResponse\" value=\"{saml_response}\"/>"
            f"<input type=\"hidden\" name=\"RelayState\" value=\"{html.escape(relay_state)}\"/>"
            "<input type=\"submit\" value=\"Continue\"/></form></body></html>"
        )
        self.answer(200, page)


def main():
    port, directory = int(sys.argv[1]), sys.argv[2]
    Handler.port, Handler.directory = port, directory
    Handler.idp = make_server(port, directory)
    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    main()
