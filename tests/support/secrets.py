"""Planted secrets and worst-case inputs for redaction tests and benchmarks.

Every secret is generated from a seeded RNG and assembled from pieces, so nothing
secret-shaped is written in the repository (and push protection has nothing to flag). Each
``Planted`` pairs the secret as it appears in a transcript (``text``: in its context, an
assignment, a URL, a header) with the part that must never be found anywhere (``secret``).
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass

__all__ = ["Planted", "pathological_lines", "planted_secrets"]

_ALNUM = string.ascii_letters + string.digits
_HEX = "0123456789abcdef"
_UPPER = string.ascii_uppercase + string.digits
_BASE64 = _ALNUM + "+/"
_BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


@dataclass(frozen=True, slots=True)
class Planted:
    kind: str
    #: the secret in context, as an agent transcript would hold it (one line unless a PEM key)
    text: str
    #: what must never reach a file, a log or a model request
    secret: str


def planted_secrets(seed: int = 0) -> list[Planted]:
    """80 secrets of 41 kinds, each unique to ``seed``."""
    rng = random.Random(seed)

    def pick(chars: str, n: int) -> str:
        return "".join(rng.choice(chars) for _ in range(n))

    def tok(n: int) -> str:
        # a digit and a letter at least: the value looks generated wherever it is put
        return pick(_ALNUM, n - 2) + rng.choice(string.digits) + rng.choice(string.ascii_letters)

    def pw() -> str:
        return "Pw" + tok(10) + "!"

    def sym() -> str:
        # printable symbols a password holds (none that its templates would escape)
        return "S" + pick(_ALNUM + "@#%^*()[]{}.,:+=!?~-_/", 14) + rng.choice(string.digits)

    p: list[Planted] = []

    def add(kind: str, secret: str, template: str) -> None:
        p.append(Planted(kind, template.format(s=secret), secret))

    sk = "sk" + "-"
    add("openai", sk + "proj-" + tok(48), "export OPENAI_API_KEY={s}")
    add("openai", sk + tok(40), "client = OpenAI(api_key='{s}')")
    add("anthropic", sk + "ant-api03-" + tok(90) + "AA", "ANTHROPIC_API_KEY: {s}")
    add("anthropic", sk + "ant-" + tok(40), "the key is {s} for staging")
    add("github", "gh" + "p_" + tok(36), "git push https://{s}@github.com/acme/app.git")
    add("github", "gh" + "o_" + tok(36), "GH_OAUTH={s}")
    add("github", "github" + "_pat_" + tok(82), "token: {s}")
    add("gitlab", "gl" + "pat-" + tok(20), "export GITLAB_PAT={s}")
    add("gitlab", "gl" + "rt-" + tok(20), "runner registered with {s}")
    add("aws", "AK" + "IA" + pick(_UPPER, 14) + "7Q", "aws_access_key_id = {s}")
    add("aws", "AS" + "IA" + pick(_UPPER, 14) + "3Z", "AWS id {s} in the log")
    add("aws_secret", tok(30) + "/" + tok(9), "aws_secret_access_key = {s}")
    add("aws_secret", tok(40), "AWS_SECRET_ACCESS_KEY={s} aws s3 ls s3://bucket")
    add("slack", "xo" + "xb-" + pick(string.digits, 12) + "-" + tok(24), "SLACK_BOT={s}")
    add("slack", "https://hooks." + "slack.com/services/T" + tok(8) + "/B" + tok(8) + "/" + tok(24),
        "post to {s} on failure")
    add("google", "AI" + "za" + tok(35), "maps key {s}")
    add("google", "GOC" + "SPX-" + tok(28), '"client_secret": "{s}"')
    add("stripe", "sk" + "_live_" + tok(24), "stripe.api_key = '{s}'")
    add("stripe", "rk" + "_live_" + tok(24), "restricted {s}")
    add("huggingface", "hf" + "_" + tok(34), "huggingface-cli login --token {s}")
    add("npm", "np" + "m_" + tok(36), "//registry.npmjs.org/:_authToken={s}")
    add("pypi", "pypi-" + "AgEIcHlwaS5vcmc" + tok(60), "password = {s}")
    add("sendgrid", "SG" + "." + tok(22) + "." + tok(43), "SENDGRID={s}")
    add("age", "AGE-" + "SECRET-KEY-1" + pick(_BECH32, 58), "# key: {s}")
    add("telegram", "AA" + tok(33), "bot 123456789:{s} is live")
    add("azure", tok(86) + "==", "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={s};"
        "EndpointSuffix=core.windows.net")
    add("jwt", "eyJ" + tok(20) + ".eyJ" + tok(40) + "." + tok(43), "cookie session={s}")
    add("bearer", tok(40), "curl -H 'Authorization: Bearer {s}' https://api.acme.dev")
    add("authorization", tok(24) + "=", 'headers = {{"Authorization": "Basic {s}"}}')
    add("url_password", pw(), "DATABASE_URL=postgres://app:{s}@db.internal:5432/app")
    add("url_password", pw(), "mysql://root:{s}@127.0.0.1/shop")
    add("url_password", pw(), "mongodb+srv://svc:{s}@cluster0.abcde.mongodb.net/prod")
    add("url_password", pw(), "REDIS_URL=redis://:{s}@cache:6379/0")
    add("url_password", pw(), "pip install -i https://deploy:{s}@pypi.acme.dev/simple pkg")
    add("basic_auth", pw(), "curl -u admin:{s} https://jenkins.acme.dev/api/json")
    add("basic_auth", pw(), "curl -s --user ci:{s} -X POST https://x.acme.dev")
    add("mysql_password", pw(), "mysql -u root -p{s} -h db shop")
    add("env", pw(), "DB_PASSWORD={s}")
    add("env", tok(32), "export SERVICE_TOKEN='{s}'")
    add("env", tok(32), "STRIPE_WEBHOOK_SECRET: {s}")
    add("password", pw(), 'password = "{s}"')
    add("password", pw(), "password: {s}")
    add("password", pw(), "--password={s}")
    add("json", tok(32), '{{"api_key": "{s}", "region": "eu"}}')
    add("json", pw(), '{{"user": "svc", "password": "{s}"}}')
    add("json", tok(32), '{{"secret": "{s}"}}')
    add("json", tok(40), '{{"token": "{s}", "expires": 3600}}')
    add("json", tok(32), '{{"accessKey": "{s}"}}')
    add("private", "home address " + tok(12), "<private>{s}</private>")
    key_body = "\n".join(pick(_BASE64, 64) for _ in range(6))
    add("private_key", key_body,
        "-----BEGIN RSA PRIVATE KEY-----\n{s}\n-----END RSA PRIVATE KEY-----")
    key_body = "\n".join(pick(_BASE64, 64) for _ in range(4))
    add("private_key", key_body,
        "-----BEGIN OPENSSH PRIVATE KEY-----\n{s}\n-----END OPENSSH PRIVATE KEY-----")
    add("vault", "hv" + "s." + tok(90), "VAULT_TOKEN={s}")
    add("doppler", "dp." + "pt." + tok(43), "doppler {s}")
    add("shopify", "shp" + "at_" + pick(_HEX, 32), "shopify {s}")
    add("databricks", "da" + "pi" + pick(_HEX, 30) + "a1", "databricks token {s}")
    add("digitalocean", "do" + "p_v1_" + pick(_HEX, 62) + "a1", "doctl auth init -t {s}")
    add("linear", "lin" + "_api_" + tok(40), "LINEAR={s}")
    add("postman", "PM" + "AK-" + pick(_HEX, 24) + "-" + pick(_HEX, 34), "postman {s}")
    add("pulumi", "pu" + "l-" + pick(_HEX, 38) + "a1", "pulumi login {s}")
    add("perplexity", "pp" + "lx-" + tok(48), "pplx {s}")
    add("groq", "gs" + "k_" + tok(52), "groq {s}")
    add("heroku", "HR" + "KU-AA" + tok(58), "heroku {s}")
    add("sentry", "sntr" + "yu_" + pick(_HEX, 62) + "a1", "sentry {s}")
    add("twilio", "S" + "K" + pick(_HEX, 30) + "a1", "twilio key {s}")
    add("discord", "https://discord.com/api/" + "webhooks/123456789012/" + tok(68), "hook {s}")
    add("grafana", "gl" + "sa_" + tok(32) + "_" + pick(_HEX, 7) + "a", "grafana {s}")
    add("credential", tok(32), 'credentials = "{s}"')
    add("api_key", tok(32), "apiKey: '{s}'")
    # the security review's forms (issue 27): symbols in the value, names and structures that
    # used to switch redaction off
    add("env", sym(), "DB_PASSWORD={s}")
    add("env", sym(), "export SMTP_PASS={s}")
    add("password", sym(), "deploy --password {s} --verbose")
    add("password", sym(), "docker login -u admin -p {s} ghcr.io")
    add("password", sym(), "<password>{s}</password>")
    add("env", sym(), "$env:DB_PASSWORD = '{s}'")
    add("password", sym(), "Server=db;User Id=sa;Pwd={s};")
    add("password", sym(), "CREATE USER app IDENTIFIED BY '{s}';")
    add("password", sym(), "Passwort: {s}")
    add("signature", tok(40), "https://b.s3.amazonaws.com/k?X-Amz-Signature={s}&x=1")
    return p


def pathological_lines(size: int) -> dict[str, str]:
    """Lines of ``size`` characters that make a rule try hardest: its literal over and over,
    near misses, unclosed blocks, long runs of the characters its values are made of."""

    def fill(piece: str) -> str:
        return (piece * (size // len(piece) + 1))[:size]

    return {
        "token runs": fill("sk-"), "glued tokens": fill("ghp_a"), "jwt heads": fill("eyJ"),
        "jwt near miss": fill("eyJabcdefghij."), "env names": fill("_KEY"),
        "env no value": fill("A_KEY="), "env call": fill("A_KEY=x") + "(",
        "keyword": fill("password"), "keyword ops": fill("token:"),
        "keyword quote": "token='" + fill("token="), "keyword call": fill("token=ab") + "(",
        "url": fill("://a:"), "url at signs": "postgres://u:" + fill("@"),
        "curl": fill("curl "), "curl words": "curl" + fill(" -x"), "mysql": fill("mysql -"),
        "pem headers": fill("-----BEGIN PRIVATE KEY-----"),
        "pem body": "-----BEGIN RSA PRIVATE KEY-----\n" + fill("QUJD\n"),
        "private": fill("<private>"), "bearer": fill("Bearer "),
        "bearer run": "Bearer " + fill("a"), "authorization": fill("Authorization: "),
        "telegram": fill("12345:AA"), "azure": fill("AccountKey="), "dashes": fill("-"),
        "underscores": fill("_"), "equals": fill("="), "backslash n": fill("\\n"),
        "quotes": fill('"'), "letters": fill("a"), "digits": fill("7"),
    }
