"""GrammarMatcher.get_captures, get_temperature and the temperature property.

XGrammar's documented meaning (its EBNF and Lark docs, GrammarMatcher.get_captures):
rules written name[capture] or name[capture="x"] record the text of each completion
while tokens or strings are accepted, in completion order; filling a mask records
nothing; rollback also rolls captures back; deduplicate=True keeps the longest
completion of each occurrence. name[temperature=x] selects the temperature while
the rule is active; an inner one overrides an outer one; the largest on ambiguity;
else default_temperature; else None. traverse_draft_tree's temperatures get each
visited node's value, -1 for none.
"""

import pytest

import zapgram
from conftest import SMALL_TOKENS

torch = pytest.importorskip("torch")


def tid(piece):
    return SMALL_TOKENS.index(piece)


NUMBERS = 'root ::= item ("," item)*\nitem[capture="number"] ::= [0-9]+\n'


def test_documented_example(small_compiler):
    m = zapgram.GrammarMatcher(small_compiler.compile_grammar(NUMBERS))
    assert m.accept_string("1,22,12")
    assert m.get_captures() == [("number", b"1"), ("number", b"22"), ("number", b"12")]
    assert m.get_captures(deduplicate=False) == [("number", b"1"), ("number", b"2"), ("number", b"22"),
                                                ("number", b"1"), ("number", b"12")]
    assert all(isinstance(n, str) and isinstance(b, bytes) for n, b in m.get_captures())


def test_masks_record_nothing_and_rollback_undoes(small_compiler):
    compiled = small_compiler.compile_grammar(NUMBERS)
    m = zapgram.GrammarMatcher(compiled)
    bitmask = zapgram.allocate_token_bitmask(1, 40)
    m.fill_next_token_bitmask(bitmask)
    assert m.get_captures() == []
    for piece in [b"1", b",", b"12", b"2"]:
        assert m.accept_token(tid(piece))
        m.fill_next_token_bitmask(bitmask)
    assert m.validate_tokens([tid(b"1"), tid(b",")]) == 2
    assert m.get_captures() == [("number", b"1"), ("number", b"122")]
    m.rollback(1)
    assert m.get_captures() == [("number", b"1"), ("number", b"12")]
    m.rollback(2)
    assert m.get_captures() == [("number", b"1")]
    f = m.fork()
    assert f.accept_string(",2")
    assert f.get_captures() == [("number", b"1"), ("number", b"2")]
    assert m.get_captures() == [("number", b"1")]
    m.reset()
    assert m.get_captures(deduplicate=False) == []


def test_nested_and_lark(small_compiler):
    g = small_compiler.compile_grammar('root ::= outer\nouter[capture] ::= "[" inner "]"\ninner[capture] ::= [ab]+\n')
    m = zapgram.GrammarMatcher(g)
    assert m.accept_string("[ab]")
    assert m.get_captures() == [("inner", b"ab"), ("outer", b"[ab]")]
    lark = small_compiler.compile_lark('start: "[" arg "]"\narg[capture]: NUM\nNUM: /[0-9]+/\n')
    m = zapgram.GrammarMatcher(lark)
    assert m.accept_string("[12]")
    assert m.get_captures() == [("arg", b"12")]
    with pytest.raises(Exception, match="rule attributes apply to rules, not to the terminal 'NUM'"):
        small_compiler.compile_lark('start: NUM\nNUM[capture]: /[0-9]+/\n')


def test_temperature(small_compiler):
    g = small_compiler.compile_grammar('root ::= "x" value\nvalue[temperature=0.7] ::= [ab]+\n')
    m = zapgram.GrammarMatcher(g)
    assert m.get_temperature() is None and m.temperature is None
    assert m.accept_string("x")
    assert m.get_temperature() == pytest.approx(0.7) and m.temperature == pytest.approx(0.7)
    d = zapgram.GrammarMatcher(g, default_temperature=0.2)
    assert d.temperature == pytest.approx(0.2)
    with pytest.raises(ValueError, match="default_temperature must be a finite number >= 0"):
        zapgram.GrammarMatcher(g, default_temperature=-1)


def test_draft_tree_temperatures(small_compiler):
    g = small_compiler.compile_grammar('root ::= "x" value "1"\nvalue[temperature=0.7] ::= [ab]+\n')
    m = zapgram.GrammarMatcher(g)
    # 0 -> x -> a -> 1 ; 0 -> y (refused)
    first = torch.tensor([1, 3, -1, 4, -1], dtype=torch.int64)
    sibling = torch.tensor([-1, 2, -1, -1, -1], dtype=torch.int64)
    tokens = torch.tensor([0, tid(b"x"), tid(b"y"), tid(b"a"), tid(b"1")], dtype=torch.int64)
    bitmask = zapgram.allocate_token_bitmask(5, 40)
    temperatures = torch.full((5,), 9.0, dtype=torch.float32)
    assert m.traverse_draft_tree(first, sibling, tokens, bitmask, temperatures=temperatures)
    assert temperatures.tolist() == pytest.approx([-1.0, 0.7, -1.0, 0.7, -1.0])
    assert m.get_captures() == []


INDENTED = '''
start: (_NL | stmt)*
?stmt: NAME _NL | NAME ":" suite
suite: _NL _INDENT stmt+ _DEDENT
NAME: /[a-z]+/
_NL: /(\\r?\\n[\\t ]*)+/
%ignore " "
%declare _INDENT _DEDENT
'''


def test_lark_indenter(small_compiler):
    # Lark's Indenter (docs/lark-lexing.md "Indentation"): detected by default.
    g = small_compiler.compile_lark(INDENTED)
    m = zapgram.GrammarMatcher(g)
    assert m.accept_string("a:\n  b\n  c\nd\n")
    assert m.is_completed()
    assert not zapgram.GrammarMatcher(g).accept_string("a:\n  b\n c")  # between two levels
    assert small_compiler.compile_lark(INDENTED, indenter="on") is not None
    with pytest.raises(Exception, match="is %declare'd and has no definition"):
        small_compiler.compile_lark(INDENTED, indenter="off")
    with pytest.raises(ValueError, match="indenter must be"):
        small_compiler.compile_lark(INDENTED, indenter="sometimes")
