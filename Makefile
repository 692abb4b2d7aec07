# The two commands: `make run` serves the app with demo data; `make test` runs the whole suite.
VENV := .venv
PY := $(VENV)/bin/python
PYTHON ?= python3
PYTEST_ARGS ?=
# The settings keep DEBUG off unless told: the demo server and the test suite are development.
export DEBUG ?= 1

.PHONY: docs-screenshots run test chromium gettext lint architecture typecheck check-deploy integration clean

$(VENV)/.installed: requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.installed-test: requirements-test.txt $(VENV)/.installed
	$(PY) -m pip install --quiet -r requirements-test.txt
	touch $@

run: $(VENV)/.installed
	$(PY) manage.py migrate --noinput
	$(PY) manage.py seed_demo
	bin/serve

chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "Install Debian's chromium (apt-get install chromium) for the browser tests" >&2; exit 1; fi; }

# msgfmt and xgettext: the i18n tests recompile and re-extract the catalogs.
gettext:
	@command -v msgfmt >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gettext >/dev/null; \
	  else echo "Install Debian's gettext (apt-get install gettext) for the translation tests" >&2; exit 1; fi; }

test: $(VENV)/.installed-test chromium gettext
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(MAKE) --no-print-directory architecture
	$(MAKE) --no-print-directory typecheck
	$(PY) manage.py makemigrations --check --dry-run
	$(PY) manage.py spectacular --validate --fail-on-warn --file /dev/null
	$(MAKE) --no-print-directory check-deploy
	$(PY) -m pytest -m "not integration" $(PYTEST_ARGS)

# The integration tests (real Celery workers on Redis), and every other non-browser test again,
# on PostgreSQL: the same code must hold on the production database. The pure cores' tests that
# use no database are not repeated (--skip-database-free, tests/conftest.py): make test ran them.
# The pictures docs/ shows, retaken by the browser tests that take them (a plain test run keeps
# its pictures under var/screenshots and never rewrites docs/). Look at them before committing.
DOCS_PICTURE_TESTS = test_calibration test_ct_tools test_gastric_adjudicate_layout \
	test_gastric_review test_gastric_review_layout test_grading_case test_hub test_image_boxes \
	test_releases
docs-screenshots: $(VENV)/.installed-test chromium
	DOCS_SCREENSHOTS=1 $(PY) -m pytest -q $(DOCS_PICTURE_TESTS:%=tests/browser/%.py)

integration: $(VENV)/.installed-test
	CLINREVIEW_REQUIRE_SERVICES=1 \
	DATABASE_URL=$${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test} \
	CELERY_BROKER_URL=$${CELERY_BROKER_URL:-redis://127.0.0.1:6379/0} \
	$(PY) -m pytest -m "not browser" --skip-database-free $(PYTEST_ARGS)

# Exactly what a deployment must set: a key and its host names; DEBUG is off when unset.
check-deploy: $(VENV)/.installed
	env -u DEBUG SECRET_KEY=$$(head -c 48 /dev/urandom | base64) ALLOWED_HOSTS=clinreview.example.org \
	$(PY) manage.py check --deploy --fail-level WARNING

lint: $(VENV)/.installed-test
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .

# The layering rules of .importlinter (tests/test_architecture.py shows each one catches a leak).
architecture: $(VENV)/.installed-test
	$(VENV)/bin/lint-imports

# mypy with django-stubs on services, selectors, formats, scoring and inference (pyproject.toml).
typecheck: $(VENV)/.installed-test
	$(VENV)/bin/mypy

clean:
	rm -rf var .pytest_cache
