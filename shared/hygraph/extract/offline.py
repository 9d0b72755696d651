"""The offline extractor: rule-based entities, relations, facts and units (no model, no network).

It is the embedded default: pure Python and stdlib ``re``, deterministic, and
fast (thousands of paragraphs a second on one core). Its rules were tuned by
measuring the entity keys it finds against an LLM's named-entity extraction of
the MuSiQue paragraphs (``benchmarks/offline_extractor.py``); the figures are in
``benchmarks/results/offline_extractor.md``.

Mentions (:func:`find_entities`), per sentence:

- **quoted titles** (“Hello Love”, "Blue Moon", ``Blue Moon'') starting with a
  capital or a digit, at most 12 words: type ``work``;
- **dates**: "14 March 1931", "March 14, 1931", "March 1931", "14 March",
  "March 14", decades ("1340s"), centuries ("19th century"), year ranges
  ("1899–1942"), years with an era ("500 BC") and bare years 1000–2099;
- **proper-noun spans**: runs of capitalised words (hyphenated, with
  apostrophes, all-caps acronyms, dotted acronyms "U.S.", initials "J. R. R."),
  joined through lowercase connectors (of, the, de, la, von, ...) when a
  capitalised word follows; a trailing number joins ("Route 17"). A possessive
  "'s" ends a span. At the start of a sentence, leading common words ("The",
  "In", "However", "He") are dropped and a lone word is kept only when it is not
  a common word and is not written in lower case elsewhere in the text. A
  capitalised "The" inside a sentence stays ("by The Beatles"), as the LLM
  writes it. A lone month name is dropped (months count only inside dates);
- **honorifics**: a style ("Sir", "King", "Dr.", "Mr.") stays in the name and a
  role ("Professor", "Mayor", "President") is taken out of it; both make the
  mention a ``person`` and go into its description;
- **numbers with units** (``numbers=True``, the default): amounts of money
  ("$5 million", "€400,000") and numbers with a unit of measure ("6.2 metres",
  "2,400 square kilometres", "100 kW"). Percentages, counts of things
  ("1,300 workers") and bare numbers are off by default: the LLM lists few of
  them (see the benchmark), ``counts=True`` turns counts on.

Overlaps resolve in that order: quoted titles, then dates, then names, then
numbers; a name may take in the year just before it ("1924 Summer Olympics").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from hygraph.extract.keys import display_name, entity_key
from hygraph.extract.schema import (
    ChunkInput,
    Entity,
    Extraction,
    ExtractionStats,
    Fact,
    Relation,
    Unit,
)
from hygraph.extract.sentences import make_units, split_sentences

__all__ = ["Mention", "OfflineExtractor", "find_entities"]


@dataclass(frozen=True, slots=True)
class Mention:
    """One entity mention: its name as written, a type, and its span in the searched text."""

    name: str
    type: str
    start: int
    end: int
    role: str = ""  # an honorific or role written before a person's name


# --------------------------------------------------------------------------- word lists

_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
_MONTH_ABBR = "Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec"
_MONTH_WORDS = frozenset(_MONTHS.split("|"))

# Lowercase words that may sit inside a name when a capitalised word follows them.
_CONNECTORS = frozenset(
    "of the de la le les du da di del della von van der den zu y & for on upon al el bin ibn".split()
)
_MAX_CONNECTORS = 2  # "Games of the XXXIII Olympiad"

# Function words: dropped when they open a sentence-initial span ("In Paris", "The Journal").
_FUNCTION = frozenset(
    """a an the this that these those there here it its it's he she they we i you his her
    their our my your him them us some any each every all both either neither no not none
    many much more most few several such another only also even just still yet so too very
    quite rather almost already always never often sometimes usually
    in on at by for from with without within into onto upon of off out over under about
    above below between among through throughout during before after since until till
    against toward towards across along around behind beside besides beyond near like unlike
    despite per via
    and or but nor if then than because although though while whereas when whenever where
    wherever whether unless once as however therefore thus hence moreover furthermore
    meanwhile nevertheless nonetheless instead otherwise indeed consequently accordingly
    additionally afterwards afterward later earlier today tomorrow yesterday now currently
    recently formerly originally initially eventually finally subsequently previously
    traditionally generally typically historically officially soon due
    what which who whom whose why how
    is are was were be been being am has have had do does did will would shall should can
    could may might must
    born located based known called named founded formed established built created
    designed written directed produced released published developed considered described
    following according including regarding concerning compared given beginning starting
    having using""".split()
)
# Lone words that are no entity at the start of a sentence (besides the function words).
_COMMON = _FUNCTION | frozenset(
    """one ones other same own first second third last next new old early late north south
    east west northern southern eastern western central part parts little mr mrs ms dr prof
    sir st yes chapter section figure table episode season volume""".split()
)
# Words that never open or close a name anywhere in a sentence.
_NEVER_EDGE = frozenset(
    """a an this that these those there it its he she they we his her their our my your
    in on at by from with into onto during before after since until although though while
    whereas when where because if however therefore thus also but or nor as although
    despite following according including""".split()
)

# Styles stay in the name (the LLM writes "King Harold II", "Sir Walter Scott").
_STYLES = frozenset(
    """mr mrs ms miss mx dr sir dame lord lady king queen prince princess emperor empress
    pope tsar czar sultan shah duke duchess archduke baron baroness count countess earl
    marquess viscount""".split()
)
# Roles are taken out of the name (the LLM writes "Jeff Colyer" for "Governor Jeff Colyer").
_ROLES = frozenset(
    """professor prof president mayor governor senator congressman congresswoman
    representative chancellor premier minister secretary ambassador judge justice
    chairman chairwoman chairperson director coach commissioner sheriff bishop archbishop
    cardinal reverend rev rabbi imam father brother sister captain capt colonel col
    lieutenant lt sergeant sgt admiral commander corporal private detective inspector
    officer agent""".split()
)
_ROLE_MODIFIERS = frozenset("prime vice deputy chief lord first grand associate assistant".split())

_ORG_CUES = frozenset(
    """university college school academy institute institution company corporation corp
    inc ltd llc plc co association party club records council shipyard orchestra bank fc
    society foundation agency department ministry committee commission organization
    organisation group church airlines airways press publishing publishers network league
    federation union army navy corps force forces parliament congress senate board trust
    hospital studios studio entertainment media magazine newspaper band choir ensemble
    team brewery railway railways motors industries systems technologies bureau
    office court cabinet government authority service services museum library gallery
    festival games olympics""".split()
)
_PLACE_CUES = frozenset(
    """river lake mount mountain mountains mt city county island islands isle bay coast
    street st road avenue boulevard lane square park valley sea ocean state province
    district village town township borough parish bridge airport station peninsula desert
    forest hill hills falls canyon creek harbour harbor port gulf strait cape beach highway
    route region territory kingdom republic castle palace tower cathedral abbey
    stadium arena reservoir glacier volcano plateau""".split()
)
_ABBREV_DOT = frozenset("st mt ft dr mr mrs ms jr sr co inc ltd corp bros prof gen capt".split())

# --------------------------------------------------------------------------- patterns

_UNITS = (
    r"km|kilometres|kilometers|kilometre|kilometer|metres|meters|metre|meter|m|cm|mm|"
    r"miles|mile|mi|feet|foot|ft|inches|inch|in|yards|yard|yd|acres|acre|hectares|hectare|ha|"
    r"kg|kilograms|kilogram|grams|gram|g|tonnes|tonne|tons|ton|pounds|lb|lbs|ounces|oz|"
    r"litres|liters|litre|liter|gallons|gallon|barrels|"
    r"kW|MW|GW|kWh|MWh|GWh|W|watts|V|volts|hp|horsepower|Hz|kHz|MHz|GHz|FM|AM|"
    r"mph|km/h|knots|°C|°F|degrees|bytes|KB|MB|GB|TB|"
    r"seconds|minutes|hours|days|weeks|months|years|decades|centuries"
)
_NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_SCALE = r"(?:\s(?:million|billion|trillion|thousand|hundred))?"
_NUMBERS = re.compile(
    r"(?<![\w.,$€£¥])"
    r"(?:(?P<money>(?:[A-Z]{1,3})?[$€£¥]\s?(?:" + _NUMBER + r")" + _SCALE + r")"
    r"|(?P<num>(?:" + _NUMBER + r")" + _SCALE + r")"
    r"(?:(?P<pct>\s?%|\spercent|\sper\scent)"
    r"|\s(?P<unit>(?:square|cubic)\s[a-z]+|(?:" + _UNITS + r")(?![\w/]))"
    r"|\s(?P<count>[a-z]{3,}s)\b)?)"
    r"(?![\d])"
)

_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
_MONTH = r"(?:" + _MONTHS + r"|(?:" + _MONTH_ABBR + r")\.?)"
_YEAR = r"\d{3,4}"
_ERA = r"(?:\s?(?:BCE|BC|AD|CE|B\.C\.|A\.D\.))"
_DATES = re.compile(
    r"(?<![\w,.])(?:"
    r"(?:" + _DAY + r"\s" + _MONTH + r",?\s" + _YEAR + r")"
    r"|(?:" + _MONTH + r"\s" + _DAY + r",?\s" + _YEAR + r")"
    r"|(?:" + _MONTH + r",?\s(?:1\d{3}|20\d{2}))"
    r"|(?:" + _DAY + r"\s" + _MONTH + r")"
    r"|(?:" + _MONTH + r"\s\d{1,2}(?:st|nd|rd|th)?)"
    r"|(?:(?:(?:early|mid|late)[\s-])?\d{1,2}(?:st|nd|rd|th)(?:\s-\s|[\s-])centur(?:y|ies)"
    r"(?:" + _ERA + r")?)"
    r"|(?:\d{1,4}" + _ERA + r")"
    r"|(?:\d{2,3}0s)"
    r"|(?:(?:1\d{3}|20\d{2})\s?[\u2013\u2014-]\s?(?:1\d{3}|20\d{2}|\d{2})(?!\d))"
    r"|(?:1\d{3}|20\d{2})"
    r")(?![\d,.]\d|\w)"
)
_BARE_YEAR = re.compile(r"(?:1\d{3}|20\d{2})")

_QUOTED = re.compile(
    r"\u201c([^\u201c\u201d]{1,120})\u201d"
    r"|(?<![\w\"])\"([^\"]{1,120})\"(?!\w)"
    r"|``([^`']{1,120}?)\s?''"
    r"|(?<!\w)\u2018([^\u2018\u2019]{1,120})\u2019(?!\w)"
)
_MAX_TITLE_WORDS = 12

_TOKEN_NODASH = re.compile(
    r"(?:[^\W\d_]\.){2,}"
    r"|[^\W_](?:[\w'\u2019]*\w)?(?:-[^\W_](?:[\w'\u2019]*\w)?)*"
    r"|[^\w\s]"
)
_TOKEN = re.compile(
    r"(?:[^\W\d_]\.){2,}"  # dotted acronyms: U.S., U.K.
    r"|[^\W_](?:[\w'\u2019]*\w)?(?:[-\u2013][^\W_](?:[\w'\u2019]*\w)?)*"  # words, O'Brien, A-B
    r"|[^\w\s]"  # punctuation, one character
)
_LOOSE = re.compile(r"[\W_]+")
_LOWER_WORD = re.compile(r"(?<![\w'\u2019-])[a-z]+(?![\w'\u2019-])")
_VERBISH = re.compile(
    r"\b(?:is|are|was|were|be|been|has|have|had|became|becomes|become|won|wins|won|"
    r"made|makes|took|takes|led|leads|held|holds|left|began|begins|wrote|writes|built|"
    r"bought|sold|gave|joined|joins|plays|played|includes|included|serves|served|"
    r"\w{3,}ed|\w{3,}es)\b"
)
_TITLE_PAREN = re.compile(r"\s*\([^()]*\)\s*$")
_LABEL_STRIP = " \t\n,;:()[]{}\"'`\u2018\u2019\u201c\u201d-\u2013\u2014"

_OPENING = frozenset("(\"'`[\u201c\u2018")


# --------------------------------------------------------------------------- mention finding


_key = lru_cache(maxsize=1 << 16)(entity_key)  # names repeat across chunks


def _loose(text: str) -> str:
    """A cheap approximate key for substring tests: casefolded words between spaces."""
    return f" {_LOOSE.sub(' ', text.casefold()).strip()} "


def _is_cap(tok: str) -> bool:
    first = tok[0]
    if first.isupper():
        return True
    return first.isalpha() and not tok.islower()  # "iPhone", "al-Qaeda", "eBay"


def _covered(intervals: list[tuple[int, int]], start: int, end: int) -> bool:
    for a, b in intervals:
        if a < end and start < b:
            return True
    return False


def _entity_type(words: list[str]) -> str:
    lowered = [w.casefold().rstrip(".") for w in words]
    if lowered[-1] in _ORG_CUES:
        return "organisation"
    if lowered[-1] in _PLACE_CUES:
        return "place"
    if lowered[0] in _ORG_CUES:
        return "organisation"
    if lowered[0] in _PLACE_CUES:
        return "place"
    for w in lowered[1:-1]:
        if w in _ORG_CUES:
            return "organisation"
    # Initials ("J. R. R. Tolkien", "George T. Solomon") mark a person.
    for w in words[:-1]:
        if len(w) == 2 and w[1] == "." and w[0].isupper():
            return "person"
    return "entity"


_X = {
    "year_before": "event",  # "", "any", "event"
    "year_after": True,
    "single_letter": False,
    "trim_common": True,
    "of_split": "both",  # "", "both", "head"
    "spaced_hyphen": False,
    "possessive_join": "head",
    "ordinal": True,
    "comma_suffix": True,
    "number_tail": "all",  # "", "all"
    "lone_month": True,
    "and": "of",
    "endash": True,
    "head_conn": True,
    "the_rule": False,
    "title_mode": "split",
    "max_words": 0,
    "acro_stop": True,
    "coref": "after",
    "coref_types": True,
    "of_generic": False,
    "ly_rule": True,
    "plural_rule": True,
    "max_run": 5,
}
_OF_GENERIC = frozenset(
    """state town city village county province district region municipality borough
    president professor governor mayor senator chancellor premier minister secretary
    director chairman""".split()
)
_ADVERB_ENDINGS = (
    "ally",
    "ately",
    "ously",
    "ively",
    "ently",
    "antly",
    "ingly",
    "edly",
    "fully",
    "ssly",
    "arly",
    "ibly",
    "ably",
    "mostly",
    "nearly",
    "roughly",
    "only",
)
_GENERIC = frozenset(
    """tv fm am kw mw gw kwh mhz khz ghz erp haat zip cdp gdp gnp ceo cfo coo cto dvd cd lp
    ep mp3 phd ba bsc ma msc mba md pc pm ad bc bce ce km mm cm kg mph hp""".split()
)
_EVENT_CUES = frozenset(
    """olympics paralympics games championship championships cup series census election
    elections season festival awards award tour open prix contest congress summit conference
    olympiad expo exposition world league tournament final finals rally marathon draft
    impact""".split()
)
_HEAD_CUES = (
    _ORG_CUES
    | _PLACE_CUES
    | frozenset(
        """house order battle siege treaty act journal history list register war republic
    kingdom empire duchy duke earl count prince princess king queen emperor bishop
    archbishop archdiocese diocese province department ministry secretary minister president
    governor mayor member members people peoples city port lord lady sea gulf cape
    prime chief council school college museum university institute academy bank
    federation confederation union league commonwealth state states""".split()
    )
)
_SUFFIX = re.compile(r",\s(?:Jr|Sr|Inc|Ltd|D\.C|II|III|IV)\b\.?")
_ORDINAL_BEFORE = re.compile(r"(?<![\w.,])\d{1,3}(?:st|nd|rd|th) $")
_YEAR_AFTER = re.compile(r" ((?:1\d{3}|20\d{2}))(?![\d,.]\d|\w)")


class _Scanner:
    """Finds mentions in the sentences of one text (it knows the text's lowercase words)."""

    __slots__ = ("text", "lower_words", "numbers", "counts")

    def __init__(self, text: str, *, numbers: bool = True, counts: bool = False) -> None:
        self.text = text
        self.lower_words: set[str] | None = None
        self.numbers = numbers
        self.counts = counts

    def _lower(self) -> set[str]:
        if self.lower_words is None:
            self.lower_words = set(_LOWER_WORD.findall(self.text))
        return self.lower_words

    def sentence(self, start: int, end: int) -> list[Mention]:
        text = self.text
        sent = text[start:end]
        found: list[Mention] = []
        taken: list[tuple[int, int]] = []

        # 1. quoted titles of works
        if '"' in sent or "\u201c" in sent or "``" in sent or "\u2018" in sent:
            for m in _QUOTED.finditer(sent):
                group = next(i for i in range(1, 5) if m.group(i) is not None)
                inner = m.group(group)
                name = inner.strip().rstrip(",.;:!?").strip()
                if not name or not (name[0].isupper() or name[0].isdigit()):
                    continue
                if len(name.split()) > _MAX_TITLE_WORDS:
                    continue
                a = start + m.start(group) + (len(inner) - len(inner.lstrip()))
                found.append(Mention(name, "work", a, a + len(name)))
                taken.append((start + m.start(), start + m.end()))

        # 2. dates
        dates: dict[int, Mention] = {}
        for m in _DATES.finditer(sent):
            a, b = start + m.start(), start + m.end()
            if not _covered(taken, a, b):
                mention = Mention(m.group(), "date", a, b)
                found.append(mention)
                dates[a] = mention
                taken.append((a, b))

        # 3. proper-noun spans
        self._names(start, end, found, taken, dates)

        # 4. numbers with units
        if self.numbers:
            for m in _NUMBERS.finditer(sent):
                if m.group("money") is None and m.group("unit") is None:
                    if not (self.counts and m.group("count")):
                        continue
                a, b = start + m.start(), start + m.end()
                if not _covered(taken, a, b):
                    found.append(Mention(m.group(), "number", a, b))
                    taken.append((a, b))

        found.sort(key=lambda x: x.start)
        return found

    def _names(
        self,
        start: int,
        end: int,
        found: list[Mention],
        taken: list[tuple[int, int]],
        dates: dict[int, Mention],
    ) -> None:
        text = self.text
        tok_re = _TOKEN if _X["endash"] else _TOKEN_NODASH
        tokens = [(m.start(), m.end(), m.group()) for m in tok_re.finditer(text, start, end)]
        # Index of the first token of the sentence proper (after opening quotes/brackets).
        first = 0
        while first < len(tokens) and tokens[first][2] in _OPENING:
            first += 1
        n = len(tokens)
        connectors = (_CONNECTORS | {"and"}) if _X["and"] else _CONNECTORS
        i = 0
        while i < n:
            a, b, tok = tokens[i]
            if not _is_cap(tok) or (taken and _covered(taken, a, b)):
                i += 1
                continue
            span: list[tuple[int, int, str]] = []
            j = i
            while j < n:
                a, b, tok = tokens[j]
                if taken and _covered(taken, a, b):
                    break
                if _is_cap(tok) or (span and _X["number_tail"] and tok.isdigit() and len(tok) <= 4):
                    if tok.endswith(("'s", "\u2019s")):
                        nxt = tokens[j + 1][2] if j + 1 < n else ""
                        if (
                            _X["possessive_join"]
                            and nxt
                            and _is_cap(nxt)
                            and (_X["possessive_join"] == "all" or nxt.casefold() in _HEAD_CUES)
                        ):
                            span.append((a, b, tok))
                            j += 1
                            continue
                        span.append((a, b - 2, tok[:-2]))
                        j += 1
                        break
                    # "J." initials and "St." abbreviations keep their dot and go on.
                    if (
                        j + 2 < n
                        and tokens[j + 1][2] == "."
                        and tokens[j + 1][0] == b
                        and ((len(tok) == 1 and tok.isupper()) or tok.casefold() in _ABBREV_DOT)
                        and _is_cap(tokens[j + 2][2])
                    ):
                        span.append((a, b + 1, tok + "."))
                        j += 2
                        continue
                    span.append((a, b, tok))
                    j += 1
                    if tok[0].isdigit():
                        break
                    continue
                if span and (tok in connectors or tok == "-"):
                    if (
                        tok == "-"
                        and _X["spaced_hyphen"]
                        and j + 1 < n
                        and tokens[j + 1][2][:1].islower()
                        and tokens[j + 1][2] not in connectors
                    ):
                        span.extend(tokens[j : j + 2])
                        j += 2
                        break
                    k = j
                    prev = span[-1][2]
                    while (
                        k < n
                        and k - j < _MAX_CONNECTORS
                        and (tokens[k][2] in connectors or tokens[k][2] == "-")
                        and _connector_ok(prev, tokens[k][2], span)
                    ):
                        prev = tokens[k][2]
                        k += 1
                    if (
                        k < n
                        and _is_cap(tokens[k][2])
                        and not (taken and _covered(taken, tokens[k][0], tokens[k][1]))
                    ):
                        span.extend(tokens[j:k])
                        j = k
                        continue
                break
            if span:
                for part in self._split_of(span):
                    self._emit(part, i == first and part[0] is span[0], found, taken, dates)
            i = max(j, i + 1)

    def _split_of(self, span: list[tuple[int, int, str]]) -> list[list[tuple[int, int, str]]]:
        """Split "A B of the C D" into two names when it reads as two (see the rule)."""
        mode = _X["of_split"]
        if (
            _X["of_generic"]
            and len(span) >= 3
            and span[1][2] == "of"
            and span[0][2].casefold() in _OF_GENERIC
        ):
            r = 2
            while r < len(span) and span[r][2] in _CONNECTORS:
                r += 1
            if r < len(span):
                return [span[r:]]
        if not mode or len(span) < 4:
            return [span]
        for k in range(1, len(span) - 1):
            if span[k][2] != "of":
                continue
            left = [t for t in span[:k] if t[2] not in _CONNECTORS]
            r = k + 1
            while r < len(span) and span[r][2] in _CONNECTORS:
                r += 1
            right = span[r:]
            if len(left) < 2 or not right:
                continue
            head = left[-1][2].casefold().rstrip(".")
            headed = head in _HEAD_CUES
            if mode == "both" and len(right) >= 2 and not headed or (mode == "head" and not headed):
                return [span[:k], *self._split_of(right)]
        return [span]

    def _emit(
        self,
        span: list[tuple[int, int, str]],
        initial: bool,
        found: list[Mention],
        taken: list[tuple[int, int]],
        dates: dict[int, Mention],
    ) -> None:
        text = self.text
        words = [t[2] for t in span]
        dropped = 0
        while words and (
            (initial and words[0].casefold().rstrip(".") in _FUNCTION)
            or (_X["trim_common"] and words[0].casefold() in _NEVER_EDGE)
            or words[0] in _CONNECTORS
            or words[0] == "-"
        ):
            words.pop(0)
            dropped += 1
        span = span[dropped:]
        while words and (
            words[-1] in _CONNECTORS
            or words[-1] == "-"
            or (_X["trim_common"] and words[-1].casefold() in _NEVER_EDGE)
        ):
            words.pop()
            span = span[:-1]
        if not words:
            return
        if initial and dropped == 0 and len(words) == 1:
            low1 = words[0].casefold()
            if low1 in self._lower():
                return
            if _X["ly_rule"] and low1.endswith(_ADVERB_ENDINGS):
                return
            if _X["plural_rule"] and low1.endswith("s") and low1[:-1] in self._lower():
                return
        role = ""
        # Honorifics: roles leave the name, styles stay in it; both mark a person.
        k = 0
        while k < len(words) - 1 and words[k].casefold().rstrip(".") in _ROLE_MODIFIERS:
            k += 1
        head = words[k].casefold().rstrip(".")
        if k < len(words) - 1 and _is_cap(words[k + 1]) and words[k + 1] not in _CONNECTORS:
            if head in _ROLES:
                role = " ".join(words[: k + 1])
                span = span[k + 1 :]
                words = words[k + 1 :]
            elif head in _STYLES and k == 0:
                role = words[0]
        if _X["max_words"] and len(words) > _X["max_words"]:
            return
        if _X["max_run"]:
            run = best = 0
            for w in words:
                run = 0 if w in _CONNECTORS else run + 1
                best = max(best, run)
            if best > _X["max_run"]:
                return
        if len(words) == 1:
            w = words[0]
            if _X["acro_stop"] and w.casefold() in _GENERIC:
                return
            if w in _MONTH_WORDS and not (_X["lone_month"] and not initial):
                return
            if w.casefold() in _COMMON and not w.isupper():
                return
            if not _X["single_letter"] and len(w) == 1:
                return
        a, b = span[0][0], span[-1][1]
        name = text[a:b]
        last = span[-1]
        if last[2] != text[last[0] : last[1]]:  # a trimmed possessive
            b = last[0] + len(last[2])
            name = text[a:b]
        etype = "person" if role else _entity_type(words)
        low = [w.casefold() for w in words]
        # A year just before an event name: "1924 Summer Olympics".
        mode = _X["year_before"]
        if mode and a >= 5 and text[a - 1] == " ":
            prev = None
            for d in dates.values():
                if d.end == a - 1 and _BARE_YEAR.fullmatch(d.name):
                    prev = d
            if (
                prev is not None
                and etype != "person"
                and (mode == "any" or any(w in _EVENT_CUES for w in low))
            ):
                found.remove(dates.pop(prev.start))
                a = prev.start
                name = text[a:b]
        elif _X["ordinal"]:
            m = _ORDINAL_BEFORE.search(text, max(0, a - 6), a)
            if m is not None:
                a = m.start()
                name = text[a:b]
        if _X["year_after"] and any(w in _EVENT_CUES for w in low) or False:
            m = _YEAR_AFTER.match(text, b)
            if m is not None and m.start(1) in dates:
                found.remove(dates.pop(m.start(1)))
                b = m.end()
                name = text[a:b]
        if _X["comma_suffix"]:
            m = _SUFFIX.match(text, b)
            if m is not None:
                b = m.end()
                name = text[a:b]
        found.append(Mention(name, etype, a, b, role))
        taken.append((a, b))


def _connector_ok(prev: str, tok: str, span: list[tuple[int, int, str]]) -> bool:
    if _X["head_conn"] and tok in ("for", "on", "upon"):
        return prev.casefold() in _HEAD_CUES
    if _X["the_rule"] and tok == "the":
        return prev in _CONNECTORS or len(span) == 1
    if tok == "and" and _X["and"] == "of":
        return any(t[2] == "of" for t in span)
    return True


def find_entities(text: str, *, numbers: bool = True, counts: bool = False) -> list[Mention]:
    """The entity mentions in ``text`` (a sentence or a passage), in order of position.

    ``numbers`` adds amounts of money and numbers with units of measure, ``counts``
    also numbers followed by a plural noun ("1,300 workers").
    """
    scanner = _Scanner(text, numbers=numbers, counts=counts)
    mentions: list[Mention] = []
    for start, end in split_sentences(text):
        mentions.extend(scanner.sentence(start, end))
    return mentions


# --------------------------------------------------------------------------- the extractor


def _fact_score(n_entities: int, sentence: str) -> float:
    """Completeness 0–10: 2 per member entity (at most 4 count) plus 2 for a verb-like word."""
    return float(min(10, 2 * min(n_entities, 4) + (2 if _VERBISH.search(sentence) else 0)))


def _label(between: str) -> str:
    label = " ".join(between.split()).strip(_LABEL_STRIP)
    if not label or len(label.split()) > 8 or not any(ch.isalnum() for ch in label):
        return "related to"
    return label


@dataclass
class OfflineExtractor:
    """Rule-based extraction of the whole schema (see the module docstring for the rules).

    Importance of an entity (0–100): ``40 + 15 * (mentions in the chunk - 1)``,
    ``+ 30`` for the chunk's title entity, ``+ 10`` when it is mentioned in the first
    sentence of the body, ``- 15`` for dates and numbers; clamped to [1, 100].
    """

    numbers: bool = False
    counts: bool = False
    max_unit_words: int = 60
    name: str = "offline"
    stats: ExtractionStats = field(default_factory=ExtractionStats)

    def extract(self, chunks: Sequence[ChunkInput]) -> list[Extraction]:
        results = []
        for chunk in chunks:
            extraction = self.extract_one(chunk)
            self.stats.count(extraction)
            results.append(extraction)
        return results

    def extract_one(self, chunk: ChunkInput) -> Extraction:
        text = chunk.text
        spans = split_sentences(text)
        scanner = _Scanner(text, numbers=self.numbers, counts=self.counts)
        title_key = ""
        title_mention: Mention | None = None
        body = spans
        if spans:
            title = _title_line(text, spans[0], chunk.title)
            if title is not None:
                mode = _X["title_mode"]
                rest = spans[1:]
                present = bool(rest) and _loose(title.name) in _loose(text[rest[0][0] :])
                if mode == "always" or present:
                    title_mention = title
                    title_key = _key(title.name)
                    body = rest
                elif mode == "inbody":
                    body = rest

        per_sentence: list[tuple[tuple[int, int], list[Mention]]] = []
        for span in body:
            per_sentence.append((span, scanner.sentence(*span)))
        if _X["coref"]:
            per_sentence = _resolve_short_forms(per_sentence, title_mention)

        counts: dict[str, int] = {}
        first_body: set[str] = set()
        order: list[Mention] = []
        if title_mention is not None:
            order.append(title_mention)
        for idx, (_, mentions) in enumerate(per_sentence):
            for m in mentions:
                key = _key(m.name)
                if not key:
                    continue
                counts[key] = counts.get(key, 0) + 1
                if idx == 0:
                    first_body.add(key)
                order.append(m)

        entities: list[Entity] = []
        for m in order:
            key = _key(m.name)
            score = 40.0 + 15.0 * (counts.get(key, 1) - 1)
            if key == title_key:
                score += 30.0
            if key in first_body:
                score += 10.0
            if m.type in ("date", "number"):
                score -= 15.0
            description = f"{m.role} ({m.type})" if m.role else ""
            entities.append(Entity(m.name, m.type, description, max(1.0, min(100.0, score))))

        relations: list[Relation] = []
        facts: list[Fact] = []
        for (s_start, s_end), mentions in per_sentence:
            distinct: list[Mention] = []
            seen: set[str] = set()
            for m in mentions:
                key = _key(m.name)
                if key and key not in seen:
                    seen.add(key)
                    distinct.append(m)
            if len(distinct) < 2:
                continue
            sentence = " ".join(text[s_start:s_end].split())
            pairs = [(distinct[k], distinct[k + 1]) for k in range(len(distinct) - 1)]
            pairs += [(distinct[0], distinct[k]) for k in range(2, len(distinct))]
            for src, dst in pairs:
                if src.end <= dst.start:
                    label = _label(text[src.end : dst.start])
                else:
                    label = "related to"
                relations.append(Relation(src.name, dst.name, label, sentence, 1.0))
            facts.append(
                Fact(sentence, [m.name for m in distinct], _fact_score(len(distinct), sentence))
            )

        units = [Unit(u) for u in make_units(text, spans, max_words=self.max_unit_words)]
        return Extraction(
            chunk_id=chunk.id,
            entities=entities,
            relations=relations,
            facts=facts,
            units=units,
            extractor=self.name,
        ).normalised()


def _resolve_short_forms(
    per_sentence: list[tuple[tuple[int, int], list[Mention]]], title: Mention | None
) -> list[tuple[tuple[int, int], list[Mention]]]:
    """Point a short form ("Autry") to the one longer name it abbreviates ("Gene Autry")."""
    full: dict[str, str | None] = {}
    first_at: dict[str, int] = {}
    candidates = [title] if title is not None else []
    candidates += [m for _, ms in per_sentence for m in ms]
    for m in candidates:
        if m.type in ("date", "number", "work"):
            continue
        if _X["coref_types"] and m.type not in ("entity", "person"):
            continue
        words = m.name.split()
        if not 2 <= len(words) <= 4 or any(w.islower() for w in words):
            continue
        forms = {words[0], words[-1]}
        if len(words) >= 3:
            forms.add(" ".join(words[-2:]))
        for form in forms:
            key = _key(form)
            if full.get(key, m.name) != m.name:
                full[key] = None  # ambiguous: two names share it
            else:
                full[key] = m.name
                first_at.setdefault(key, m.start)
    if not full:
        return per_sentence
    out = []
    for span, mentions in per_sentence:
        resolved = []
        for m in mentions:
            key = _key(m.name)
            target = full.get(key)
            if (
                target is not None
                and m.type not in ("date", "number", "work")
                and (_X["coref"] == "any" or first_at[key] < m.start)
            ):
                m = Mention(target, m.type, m.start, m.end, m.role)
            resolved.append(m)
        out.append((span, resolved))
    return out


def _title_line(text: str, span: tuple[int, int], title: str | None) -> Mention | None:
    """The title entity when the chunk starts with its title line (or a markdown heading)."""
    start, end = span
    line_end = text.find("\n", start)
    if line_end == -1 or text[end:line_end].strip():
        return None  # no body after it, or the first sentence is not the whole line
    line = text[start:end]
    heading = text[:start].lstrip().startswith("#")
    if title is not None:
        if _key(display_name(title)) != _key(line):
            return None
    elif not heading:
        return None
    name = _TITLE_PAREN.sub("", line).strip() or line
    b = start + len(name)
    words = name.split()
    return Mention(name, _entity_type(words) if words else "entity", start, b)
