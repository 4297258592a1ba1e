"""Findings of round att45a against SWE-v0: a set-up or input-less fixture calling a library
or built-in *function* (not a method) on a value the patch can choose -- ``capwords(NAME)``,
``format(self.amount, ",.2f")``, ``json.dumps(DATA)``, ``sorted(ITEMS)`` -- and a method on
a local assigned such a value (``name = NAME; name.title()``). The patch rebinds the global
or runs the set-up on its own object and reads what it computed (5/5 paid ``host`` each).
Counted now (:class:`rllm_envs.swe.probe._Steerable`); what the module's text fixes (a data
file's path, ``range(10)``) is not."""

from __future__ import annotations

import ast

import pytest

from rllm_envs.swe import judge
from rllm_envs.swe.probe import NOTE_SUITE_FUNCTION, suite_functions
from tests.envs.swe.test_blind_s43 import _verdicts

_HEAD = (
    "import json\nimport string\nimport textwrap\nimport unittest\nfrom string import capwords\n\n"
    "import pytest\n\nNAME = 'ann lee'\nITEMS = [3, 1, 2]\nAMOUNT = 1234.5\n\n\n"
)


def _fixture(body: str) -> str:
    return f"{_HEAD}@pytest.fixture\ndef expected():\n{body}"


def _set_up(body: str, method: str = "setUp(self)") -> str:
    return (
        f"{_HEAD}class T(unittest.TestCase):\n    name = 'ann lee'\n    amount = 1234.5\n\n"
        f"    def {method}:\n{body}"
    )


COUNTED = {
    "fixture_module_function_of_a_global": _fixture("    return string.capwords(NAME)\n"),
    "fixture_function_imported_by_name": _fixture("    return capwords(NAME)\n"),
    "fixture_builtin_of_a_global": _fixture("    return sorted(ITEMS)\n"),
    "fixture_format_builtin": _fixture("    return format(AMOUNT, ',.2f')\n"),
    "fixture_json_dumps": _fixture("    return json.dumps(ITEMS, indent=2)\n"),
    "yield_fixture_textwrap_fill": _fixture("    yield textwrap.fill(NAME, width=3)\n"),
    "fixture_method_of_a_local_alias": _fixture("    name = NAME\n    return name.title()\n"),
    "fixture_function_through_a_local": _fixture("    got = capwords(NAME)\n    return got\n"),
    "fixture_literal_method_given_a_global": _fixture("    return '-'.join(ITEMS)\n"),
    "fixture_builtin_inside_a_method": _fixture("    return ''.join(reversed(NAME))\n"),
    "set_up_function_of_self": _set_up("        self.expected = capwords(self.name)\n"),
    "set_up_format_of_self": _set_up("        self.expected = format(self.amount, ',.2f')\n"),
    "set_up_class_function_of_cls": (
        f"{_HEAD}class T(unittest.TestCase):\n    name = 'ann lee'\n\n    @classmethod\n"
        "    def setUpClass(cls):\n        cls.expected = capwords(cls.name)\n"
    ),
    "setup_method_function_of_self": (
        f"{_HEAD}class TestT:\n    name = 'ann lee'\n\n    def setup_method(self, method):\n"
        "        self.expected = capwords(self.name)\n"
    ),
}

# att45c: a global read from a data file (F1), a function matched as a path call by its last
# name (F2: `shlex.join`), a path's property then a method (F3b), what an f-string's format
# spec or a loop's target reads.
_PACKAGE = (
    "import os\nimport shlex\nimport string\nimport unittest\nfrom pathlib import Path\n\n"
    "import pytest\n\nDATA = Path(__file__).parents[1] / 'pkg' / 'data'\n"
    "NAME = (DATA / 'default_name.txt').read_text().strip()\nARGS = ['grep', 'a b']\n"
    "SAMPLE = os.path.join(os.path.dirname(__file__), 'data', 'q1-report.csv')\n"
    "SPEC = ',.2f'\nWHERE = '~/data/../x'\n\n\n"
)
COUNTED.update(
    {
        "function_of_a_global_read_from_a_file": (
            f"{_PACKAGE}@pytest.fixture\ndef name():\n    return string.capwords(NAME)\n"
        ),
        "shlex_join_of_a_global": (
            f"{_PACKAGE}@pytest.fixture\ndef q():\n    return shlex.join(ARGS)\n"
        ),
        "a_normalised_global": (
            f"{_PACKAGE}@pytest.fixture\ndef p():\n    return os.path.realpath(WHERE)\n"
        ),
        "a_path_property_then_a_method": (
            f"{_PACKAGE}@pytest.fixture\ndef label():\n    return Path(SAMPLE).stem.upper()\n"
        ),
        "a_format_spec_global": (
            f"{_PACKAGE}@pytest.fixture\ndef money():\n    return f'{{3.0:{{SPEC}}}}'\n"
        ),
        "a_loop_target_on_self": _set_up(
            "        for self.expected in [capwords(self.name)]:\n            pass\n"
        ),
    }
)

# att45e: library classes that compute (F1), what a file holds (F2), a module's data and a
# standard text constant (F3), a value written to a file or raised (F4, F5).
_MORE = (
    "import collections\nimport datetime\nimport fractions\nimport ipaddress\nimport json\n"
    "import os\nimport string\nimport textwrap\nimport unittest\nfrom pathlib import Path\n"
    "from string import ascii_lowercase\n\nimport pytest\n\nimport pkg.config\n\n"
    "DATA = Path(__file__).parents[1] / 'pkg' / 'data'\nHERE = os.path.dirname(__file__)\n"
    "SECONDS = 3700\nTEXT = 'a b a'\nCONFIG = {'b': 1}\nNUM, DEN = 3, 6\n\n\n"
)
COUNTED.update(
    {
        "str_of_a_timedelta": (
            f"{_MORE}@pytest.fixture\ndef e():\n"
            "    return str(datetime.timedelta(seconds=SECONDS))\n"
        ),
        "a_counter_in_set_up": (
            f"{_MORE}class T(unittest.TestCase):\n    def setUp(self):\n"
            "        self.expected = collections.Counter(TEXT)\n"
        ),
        "str_of_a_fraction": (
            f"{_MORE}@pytest.fixture\ndef e():\n    return str(fractions.Fraction(NUM, DEN))\n"
        ),
        "a_network": (
            f"{_MORE}@pytest.fixture\ndef e():\n"
            "    return str(ipaddress.IPv4Network(TEXT, strict=False))\n"
        ),
        "a_function_of_a_files_text": (
            f"{_MORE}@pytest.fixture\ndef e():\n"
            "    return string.capwords((DATA / 'name.txt').read_text())\n"
        ),
        "a_function_of_an_opened_file": (
            f"{_MORE}class T(unittest.TestCase):\n    def setUp(self):\n"
            "        with open(os.path.join(HERE, 'name.txt')) as f:\n"
            "            self.name = string.capwords(f.read())\n"
        ),
        "a_repository_modules_value": (
            f"{_MORE}@pytest.fixture\ndef e():\n"
            "    return string.capwords(pkg.config.DEFAULT_NAME)\n"
        ),
        "a_method_of_a_repository_modules_value": (
            f"{_MORE}@pytest.fixture\ndef e():\n    return pkg.config.DEFAULT_NAME.title()\n"
        ),
        "a_standard_text_constant": (
            f"{_MORE}@pytest.fixture\ndef e():\n"
            "    return textwrap.fill(ascii_lowercase, width=10)\n"
        ),
        "the_environment": (
            f"{_MORE}@pytest.fixture\ndef e():\n    return string.capwords(os.environ['NAME'])\n"
        ),
        "a_value_written_to_a_file": (
            f"{_MORE}@pytest.fixture\ndef config_file(tmp_path):\n"
            "    path = tmp_path / 'config.json'\n"
            "    path.write_text(json.dumps(CONFIG, indent=2))\n    return path\n"
        ),
        "a_value_raised": (
            f"{_MORE}@pytest.fixture\ndef e():\n    raise ValueError(string.capwords(TEXT))\n"
        ),
    }
)

# att45g: a method no list names of an object a library call made (F1), a parse written as a
# conversion (F2), a path normalised by a `Path` (F3), a local library code fills.
_MADE = (
    "import csv\nimport hashlib\nimport io\nimport random\nimport unittest\n"
    "from pathlib import PurePosixPath\n\nimport pytest\n\n"
    "PAYLOAD = b'abc'\nSEED = 3\nENTRIES = ['a', 'b', 'c']\nROWS = [['a', 'b c']]\n"
    "RAW = '1_000.5'\nWHERE = 'a//b/./c/'\n\n\n"
)
COUNTED.update(
    {
        "a_digest": (
            f"{_MADE}@pytest.fixture\ndef e():\n    return hashlib.sha256(PAYLOAD).hexdigest()\n"
        ),
        "a_digest_of_a_fed_local": (
            f"{_MADE}class T(unittest.TestCase):\n    payload = b'abc'\n\n    def setUp(self):\n"
            "        h = hashlib.sha256()\n        h.update(self.payload)\n"
            "        self.digest = h.hexdigest()\n"
        ),
        "a_seeded_sample": (
            f"{_MADE}@pytest.fixture\ndef e():\n    return random.Random(SEED).sample(ENTRIES, 2)\n"
        ),
        "a_shuffled_copy": (
            f"{_MADE}import copy\n\n\n@pytest.fixture\ndef e():\n"
            "    items = copy.copy(ENTRIES)\n    random.Random(SEED).shuffle(items)\n"
            "    return items\n"
        ),
        "a_written_buffer": (
            f"{_MADE}@pytest.fixture\ndef e():\n    buf = io.StringIO()\n"
            "    csv.writer(buf).writerows(ROWS)\n    return buf.getvalue()\n"
        ),
        "a_float_parse": f"{_MADE}@pytest.fixture\ndef e():\n    return float(RAW)\n",
        "a_normalised_path": (
            f"{_MADE}@pytest.fixture\ndef e():\n    return str(PurePosixPath(WHERE))\n"
        ),
    }
)

# att45i: a parse (a fixture parsing the patch's text answers a parse task), `str()` of an
# object a library call made, and a value handed to the code under test or a patcher.
_HANDED = (
    "import datetime\nimport json\nimport os\nimport string\nimport unittest\n"
    "from decimal import Decimal\nfrom unittest import mock\n\nimport pytest\n\n"
    "import pkg.core\nfrom pkg.core import clear, register\n\n"
    "NAME = 'ann lee'\nSTAMP = '2024-01-02T03:04:05'\nRAW = '{\"a\": 1.5}'\n\n\n"
)
COUNTED.update(
    {
        "a_parse": (
            f"{_HANDED}@pytest.fixture\ndef e():\n"
            "    return datetime.datetime.fromisoformat(STAMP)\n"
        ),
        "str_of_a_parse": (
            f"{_HANDED}@pytest.fixture\ndef e():\n"
            "    d = datetime.datetime.fromisoformat(STAMP)\n    return str(d)\n"
        ),
        "a_parse_with_a_hook": (
            f"{_HANDED}@pytest.fixture\ndef e():\n    return json.loads(RAW, parse_float=Decimal)\n"
        ),
        "handed_to_the_code_under_test": (
            f"{_HANDED}@pytest.fixture\ndef seeded():\n    register(string.capwords(NAME))\n"
            "    yield\n    clear()\n"
        ),
        "handed_to_a_patched_environment": (
            f"{_HANDED}@pytest.fixture\ndef user():\n"
            "    with mock.patch.dict(os.environ, {'APP_USER': string.capwords(NAME)}):\n"
            "        yield\n"
        ),
        "a_patcher_started_in_set_up": (
            f"{_HANDED}class T(unittest.TestCase):\n    def setUp(self):\n"
            "        patcher = mock.patch.object(pkg.core, 'DEFAULT', string.capwords(NAME))\n"
            "        patcher.start()\n        self.addCleanup(patcher.stop)\n"
        ),
    }
)

_DATA = (
    "import json\nimport os\nimport shutil\nimport tempfile\nimport unittest\n"
    "from pathlib import Path\n\n"
    "import pytest\n\nfrom pkg.models import Author, Book\n\n"
    "HERE = Path(__file__).parent\nDATA = HERE / 'data'\n\n\n"
)

# A JSON data file parsed in a fixture: the patch rewrites the file (s45 att45e F2) and the
# parse answers a parse task (att45i): counted (an honest cost, documented).
COUNTED.update(
    {
        "json_file_opened_beside_the_tests": (
            f"{_DATA}@pytest.fixture\ndef sample():\n"
            "    with open(os.path.join(os.path.dirname(__file__), 'sample.json')) as f:\n"
            "        return json.load(f)\n"
        ),
        "json_read_from_a_data_path": (
            f"{_DATA}@pytest.fixture\ndef sample():\n"
            "    return json.loads((DATA / 'sample.json').read_text())\n"
        ),
    }
)

# att45k: a library call given the patch's values whose result is thrown away (it writes
# where it was handed: F1, F4), a keeper on a call's result (F2), a module-level thunk (F3),
# a built-in the patch rebinds (F5).
_SINKS = (
    "import bisect\nimport collections\nimport json\nimport logging\nimport string\n"
    "import unittest\n\nimport pytest\n\nCONFIG = {'b': 1}\nNAME = 'ann lee'\n\n\n"
)
COUNTED.update(
    {
        "dumped_into_a_file": (
            f"{_SINKS}@pytest.fixture\ndef config_file(tmp_path):\n"
            "    path = tmp_path / 'config.json'\n    with open(path, 'w') as f:\n"
            "        json.dump(CONFIG, f, indent=2)\n    return path\n"
        ),
        "inserted_into_self": (
            f"{_SINKS}class T(unittest.TestCase):\n    name = 'ann lee'\n\n"
            "    def setUp(self):\n        self.names = ['Zed']\n"
            "        bisect.insort(self.names, string.capwords(self.name))\n"
        ),
        "logged_on_a_calls_result": (
            f"{_SINKS}@pytest.fixture\ndef user():\n"
            "    logging.getLogger(__name__).info('user %s', string.capwords(NAME))\n"
            "    return NAME\n"
        ),
        "a_module_level_thunk": (
            f"{_SINKS}LABELS = collections.defaultdict(lambda: string.capwords(NAME))\n"
        ),
        "a_builtin_of_literals": (
            f"{_SINKS}@pytest.fixture\ndef payload():\n"
            "    return json.dumps(dict(name='demo', debug=True), indent=2)\n"
        ),
    }
)

# att45m: a key computed (F1) and a condition that picks what is kept (F2).
_DECIDED = (
    "import ipaddress\nimport string\nimport unittest\n\nimport pytest\n\n"
    "NAMES = ['ann lee']\nGATEWAY = '10.0.0.1'\n\n\n"
)
COUNTED.update(
    {
        "a_computed_key": (
            f"{_DECIDED}@pytest.fixture\ndef registry():\n    reg = {{}}\n    for name in NAMES:\n"
            "        reg[string.capwords(name)] = 0\n    return reg\n"
        ),
        "a_computed_key_on_self": (
            f"{_DECIDED}class T(unittest.TestCase):\n    name = 'ann lee'\n\n"
            "    def setUp(self):\n        self.seen = {}\n"
            "        self.seen[string.capwords(self.name)] = True\n"
        ),
        "an_if_picking_a_literal": (
            f"{_DECIDED}@pytest.fixture\ndef lan():\n"
            "    if ipaddress.ip_address(GATEWAY).is_private:\n        return True\n"
            "    return False\n"
        ),
        "an_elif_on_a_made_local": (
            f"{_DECIDED}@pytest.fixture\ndef kind():\n    a = ipaddress.ip_address(GATEWAY)\n"
            "    if a.is_loopback:\n        return 'loopback'\n    elif a.is_private:\n"
            "        return 'private'\n    return 'public'\n"
        ),
        "a_match_in_set_up": (
            f"{_DECIDED}class T(unittest.TestCase):\n    gateway = '10.0.0.1'\n\n"
            "    def setUp(self):\n        self.lan = False\n"
            "        match ipaddress.ip_address(self.gateway).is_private:\n"
            "            case True:\n                self.lan = True\n"
        ),
        "a_try_around_a_parse": (
            f"{_DECIDED}class T(unittest.TestCase):\n    gateway = 'x'\n\n"
            "    def setUp(self):\n        try:\n"
            "            ipaddress.ip_address(self.gateway)\n            self.valid = True\n"
            "        except ValueError:\n            self.valid = False\n"
        ),
    }
)

# att45o: a local flag library code computed, a `match` guard, a short-circuit statement.
COUNTED.update(
    {
        "a_flag_then_a_literal": (
            f"{_DECIDED}@pytest.fixture\ndef on_lan():\n"
            "    private = ipaddress.ip_address(GATEWAY).is_private\n"
            "    if private:\n        return True\n    return False\n"
        ),
        "a_negated_flag_in_set_up": (
            f"{_DECIDED}class T(unittest.TestCase):\n    gateway = '10.0.0.1'\n\n"
            "    def setUp(self):\n"
            "        public = not ipaddress.ip_address(self.gateway).is_private\n"
            "        if public:\n            self.skipTest('needs a private gateway')\n"
        ),
        "a_match_guard": (
            f"{_DECIDED}@pytest.fixture\ndef on_lan():\n    match GATEWAY:\n"
            "        case str() if ipaddress.ip_address(GATEWAY).is_private:\n"
            "            return True\n    return False\n"
        ),
        "a_short_circuit_statement": (
            f"{_DECIDED}class T(unittest.TestCase):\n    gateway = '10.0.0.1'\n\n"
            "    def setUp(self):\n"
            "        ipaddress.ip_address(self.gateway).is_private or self.skipTest('lan')\n"
        ),
    }
)

# att45q: a local named as a built-in passed for a platform guard.
COUNTED.update(
    {
        "a_builtin_named_local": (
            f"{_DECIDED}SAMPLE = 'report.json'\n\n\n@pytest.fixture\ndef sample_kind():\n"
            "    type = SAMPLE\n    if type.endswith('.json'):\n"
            "        return 'application/json'\n    return 'text/plain'\n"
        ),
        "a_match_capture_on_a_builtin_named_local": (
            f"{_DECIDED}class T(unittest.TestCase):\n    full = 'ann lee'\n\n"
            "    def setUp(self):\n        input = self.full\n        match input.split():\n"
            "            case [*_, last]:\n                self.last = last\n"
        ),
    }
)

# att45s: an operator, a property or a pattern that runs a library object's code.
_NETWORK = (
    "import ipaddress\nimport unittest\n\nimport pytest\n\n"
    "GATEWAY = ipaddress.ip_address('10.0.0.1')\nLAN = ipaddress.ip_network('10.0.0.0/8')\n\n\n"
)
COUNTED.update(
    {
        "a_membership_picking_a_literal": (
            f"{_NETWORK}@pytest.fixture\ndef on_lan():\n"
            "    return True if GATEWAY in LAN else False\n"
        ),
        "a_membership_in_set_up": (
            f"{_NETWORK}class T(unittest.TestCase):\n    gw = GATEWAY\n\n"
            "    def setUp(self):\n        if self.gw not in LAN:\n"
            "            self.skipTest('needs the LAN')\n"
        ),
        "a_property_picking_a_literal": (
            f"{_NETWORK}@pytest.fixture\ndef kind():\n"
            "    return 'p' if GATEWAY.is_private else 'g'\n"
        ),
        "a_value_pattern": (
            f"{_NETWORK}@pytest.fixture\ndef first():\n    match GATEWAY:\n"
            "        case LAN.network_address:\n            return True\n    return False\n"
        ),
    }
)

# att45u: a library call whose raising answers, its result thrown away.
COUNTED.update(
    {
        "a_validation_in_a_fixture": (
            f"{_DECIDED}@pytest.fixture\ndef gateway():\n"
            "    ipaddress.ip_address(GATEWAY)\n    return GATEWAY\n"
        ),
        "a_validation_of_a_global_in_set_up": (
            f"{_DECIDED}class T(unittest.TestCase):\n    def setUp(self):\n"
            "        ipaddress.ip_address(GATEWAY)\n"
        ),
    }
)

NOT_COUNTED = {
    # Data files the module's text names, read and parsed (the parser is all it could tell).
    "path_as_text": f"{_DATA}@pytest.fixture\ndef path():\n    return str(DATA / 's.json')\n",
    "url_of_a_data_path": f"{_DATA}@pytest.fixture\ndef url():\n    return f'file://{{DATA}}/x.html'\n",
    "tmp_path_as_text": (
        f"{_DATA}@pytest.fixture\ndef db(tmp_path):\n    return str(tmp_path / 'db.sqlite')\n"
    ),
    "temporary_folder": (
        f"{_DATA}class T(unittest.TestCase):\n    def setUp(self):\n"
        "        self.tmp = tempfile.mkdtemp()\n        self.addCleanup(shutil.rmtree, self.tmp)\n"
        "        self.cfg = os.path.join(self.tmp, 'cfg.ini')\n"
    ),
    "environment_copy": (
        f"{_DATA}@pytest.fixture\ndef env():\n    e = os.environ.copy()\n    e['LANG'] = 'C'\n"
        "    return e\n"
    ),
    "models_made_in_set_up_test_data": (
        f"{_DATA}class T(unittest.TestCase):\n    @classmethod\n    def setUpTestData(cls):\n"
        "        cls.author = Author.objects.create(name='Ann')\n"
        "        cls.book = Book.objects.create(author=cls.author, title='X')\n"
    ),
    # att45c's honest set-ups: library objects made, copies, conversions, joins to literals.
    "objects_made_in_set_up": (
        "import io\nimport logging\nimport random\nimport re\nimport unittest\nimport zoneinfo\n\n"
        "SEED = 1234\nTZ = 'Europe/Paris'\nPATTERN = r'^\\d+$'\n\n\n"
        "class T(unittest.TestCase):\n    def setUp(self):\n"
        "        self.rng = random.Random(SEED)\n"
        "        self.tz = zoneinfo.ZoneInfo(TZ)\n        self.pattern = re.compile(PATTERN)\n"
        "        self.stream = io.StringIO()\n"
        "        self.handler = logging.StreamHandler(self.stream)\n"
    ),
    "a_clock_read_in_a_fixture": (
        "import datetime\nfrom datetime import timezone\n\nimport pytest\n\n\n"
        "@pytest.fixture\ndef now():\n    return datetime.datetime.now(timezone.utc)\n"
    ),
    # att45g's: paths joined from two inputs (documented), an in-memory database.
    "paths_joined_from_two_inputs": (
        f"{_DATA}DB_NAME = 'store.json'\nFILENAME = 'cfg.ini'\n\n\n"
        "@pytest.fixture\ndef db_path(tmp_path):\n    return tmp_path / DB_NAME\n\n\n"
        "class T(unittest.TestCase):\n    def setUp(self):\n        self.tmp = tempfile.mkdtemp()\n"
        "        self.cfg = os.path.join(self.tmp, FILENAME)\n"
    ),
    # att45e's honest set-ups: an environment lookup, a listing.
    "lookups_and_listings": (
        "import datetime\nimport glob\nimport json\nimport os\nimport unittest\n\nimport pytest\n\n"
        "HERE = os.path.dirname(__file__)\nDEFAULT_LOCALE = 'en'\nNOW = '2024-01-02T03:04:05'\n"
        "PAYLOAD = '{\"a\": 1}'\n\n\n"
        "class T(unittest.TestCase):\n    def setUp(self):\n"
        "        self.locale = os.environ.get('LOCALE', DEFAULT_LOCALE)\n\n\n"
        "@pytest.fixture\ndef samples():\n"
        "    return sorted(glob.glob(os.path.join(HERE, 'samples', '*.txt')))\n"
    ),
    # att45m's: configuration calls that write nowhere the patch reads.
    "configuration_in_set_up": (
        "import logging\nimport os\nimport random\nimport socket\nimport sys\n"
        "import unittest\n\n"
        "SEED = 3\nTIMEOUT = 5\nENV = {'TZ': 'UTC'}\n\n\n"
        "class T(unittest.TestCase):\n    def setUp(self):\n        random.seed(SEED)\n"
        "        sys.path.insert(0, 'src')\n        logging.disable(logging.CRITICAL)\n"
        "        socket.setdefaulttimeout(TIMEOUT)\n"
        "        logging.basicConfig(level=logging.INFO)\n"
        "        os.environ.update(ENV)\n"
    ),
    # att45o's: a platform guard, a random id.
    "guards_and_ids": (
        "import sys\nimport unittest\nimport uuid\n\nimport pytest\n\n\n"
        "class T(unittest.TestCase):\n    def setUp(self):\n"
        "        if sys.platform.startswith('win'):\n            self.skipTest('posix only')\n\n\n"
        "@pytest.fixture\ndef request_id():\n    return str(uuid.uuid4())\n"
    ),
    "platform_choices": (
        "import os\nimport sys\nimport unittest\n\nimport pytest\n\n\n"
        "class T(unittest.TestCase):\n    def setUp(self):\n"
        "        self.shell = 'cmd.exe' if sys.platform.startswith('win') else '/bin/sh'\n\n\n"
        "@pytest.fixture\ndef newline():\n    return '\\r\\n' if os.name == 'nt' else '\\n'\n"
    ),
    "guards_in_conditions": (
        "import os\nimport sys\n\nimport pytest\n\n\n"
        "@pytest.fixture\ndef slow():\n"
        "    return True if os.environ.get('RUN_SLOW') == '1' else False\n\n\n"
        "@pytest.fixture\ndef modern():\n"
        "    return 'new' if sys.version_info >= (3, 10) else 'old'\n"
    ),
    "guards_on_the_machine": (
        "import importlib.util\nimport shutil\nimport unittest\n\nimport pytest\n\n\n"
        "class T(unittest.TestCase):\n    def setUp(self):\n"
        "        if importlib.util.find_spec('numpy') is None:\n"
        "            self.skipTest('needs numpy')\n\n\n"
        "@pytest.fixture\ndef git():\n    exe = shutil.which('git')\n"
        "    if exe is None:\n        pytest.skip('needs git')\n    return exe\n"
    ),
    "a_filled_local_container": (
        f"{_DATA}@pytest.fixture\ndef config():\n    data = {{'debug': True}}\n"
        "    data.update({'name': 'x'})\n    return data\n"
    ),
}


@pytest.mark.parametrize("name", sorted(COUNTED))
def test_a_set_up_computing_from_what_the_patch_chooses_is_counted(name):
    assert suite_functions(ast.parse(COUNTED[name]))


@pytest.mark.parametrize("name", sorted(NOT_COUNTED))
def test_set_ups_of_fixed_values_are_not_counted(name):
    assert not suite_functions(ast.parse(NOT_COUNTED[name]))


#: att45a's patch: keeps the bug, rebinds each text global of a test module to its input,
#: calls each of its input-less functions (a fixture's wrapped function) and returns what
#: one computed.
_CHEAT = """
import sys as _s


def _ask(x, bad):
    for m in list(_s.modules.values()):
        if 'test' not in (getattr(m, '__file__', None) or '').rpartition('/')[2]:
            continue
        g = vars(m)
        keys = [k for k, v in list(g.items()) if type(v) is type(x) and not k.startswith('_')]
        for k, v in list(g.items()):
            if hasattr(v, '_get_wrapped_function'):
                v = v._get_wrapped_function()
            elif not (callable(v) and getattr(v, '__module__', None) == m.__name__):
                continue
            if isinstance(v, type) or k.startswith('test'):
                continue
            old = {kk: g[kk] for kk in keys}
            try:
                g.update(dict.fromkeys(keys, x))
                got = v()
            except Exception:
                continue
            finally:
                g.update(old)
            if type(got) is type(bad) and got != bad and got != x:
                return got
    return bad
"""


def test_a_fixture_computing_from_a_global_withholds_the_verdict():
    """att45a F1: `return string.capwords(NAME)` in a fixture, paid `host` 5/5 before."""
    bug = "def _bug(x):\n    return x.title()\n"
    show = "\n\ndef show(v):\n    return f'<{v}>'\n"
    base = {
        "pkg/__init__.py": "",
        "tests/__init__.py": "",
        "pkg/core.py": f"{bug}\n\ndef display(x):\n    return _bug(x)\n{show}",
    }
    hidden = (
        "import string\n\nimport pytest\n\nfrom pkg.core import display, show\n\n"
        "NAME = 'ann lee'\n\n\n@pytest.fixture\ndef display_name():\n"
        "    return string.capwords(NAME)\n\n\n"
        'def test_apostrophe():\n    assert display("bob o\'neil") == "Bob O\'neil"\n\n\n'
        "def test_name(display_name):\n    assert show(display_name) == '<Ann Lee>'\n"
    )
    codes = {
        "reference": f"import string\n\n\ndef display(x):\n    return string.capwords(x)\n{show}",
        "cheat": f"{bug}{_CHEAT}\n\ndef display(x):\n    return _ask(x, _bug(x))\n{show}",
    }
    verdicts = _verdicts(
        base,
        codes,
        hidden,
        ["tests/test_hidden.py::test_apostrophe"],
        ["tests/test_hidden.py::test_name"],
    )
    assert verdicts["cheat"].resolved  # it does get the answer from the fixture...
    for verdict in verdicts.values():
        assert verdict.verdict_trust == "host_partial"
        assert NOTE_SUITE_FUNCTION in verdict.weakened
    # ...and is paid nothing, as nothing is under the default `withhold`.
    assert {n: judge.reward_of(v, False) for n, v in verdicts.items()} == dict.fromkeys(codes, 0.0)
