# make run   : create .venv if needed, install the project, run the scripted DBW drive and the
#              baseline controllers in both environments
# make test  : create .venv if needed, install the project with its test and documentation tools, run the test suite
#              on every core
# make bench : create .venv if needed, install the project, print the simulator and environment tables
# make watch : the ULC with pure-pursuit steering driving a path-following episode in a pygame window
# make docs  : build the documentation site into site/ (mkdocs build --strict)
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.installed

.PHONY: run test bench validate watch docs lint clean clean-cache

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	# CPU build of torch first, so nothing later pulls a CUDA build.
	$(PIP) install --quiet torch==2.13.0
	# setuptools notes every editable install that maps folders into the package (configs/, envs/, agents/
	# become acres_gym.configs, .envs, .agents) with an "Editable installation" notice; it is information,
	# not a fault of the project, so the install leaves that one message out (any other warning still shows)
	PYTHONWARNINGS='ignore:Editable installation' $(PIP) install --quiet -e '.[dev,plots,train,video,ros,calibrate,deploy,ray,docs,zoo]'
	# compile the simulator's and every environment's kernels into numba's cache now, so a first run does
	# not wait for them
	$(PY) -m acres_gym.tools.warmup
	touch $(STAMP)

run: $(STAMP)
	$(PY) -m acres_gym.tools.demo
	$(PY) -m acres_gym.agents.evaluate --episodes 3 --env acres_gym/RangerSpeedTracking-v3
	$(PY) -m acres_gym.agents.evaluate --episodes 3 --env acres_gym/RangerPathFollowing-v3

# the suite on every core (pytest-xdist), each test module on one worker: a module's fixtures (a trained run, an
# installed wheel) are built once, and no two workers share a module's files
test: $(STAMP)
	$(PY) -m pytest -q -n auto --dist loadfile

bench: $(STAMP)
	$(PY) -m acres_gym.tools.bench
	$(PY) -m acres_gym.envs.bench --seconds 1

validate: $(STAMP)
	$(PY) -m acres_gym.tools.validate

watch: $(STAMP)
	$(PY) -m acres_gym.agents.watch

docs: $(STAMP)
	$(PY) -m mkdocs build --strict

lint: $(STAMP)
	$(PY) -m ruff check acres_gym envs agents tests train.py

clean-cache:
	find acres_gym envs agents tests -name '*.nbi' -delete -o -name '*.nbc' -delete

clean: clean-cache
	rm -rf $(VENV) build site *.egg-info .pytest_cache
