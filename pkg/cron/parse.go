package cron

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// field numbers, in the order the fields appear.
const (
	fSeconds = iota
	fMinutes
	fHours
	fDayOfMonth
	fMonth
	fDayOfWeek
	fYear
	numFields
)

// fieldSpec describes one field: its name in errors, its values, the
// largest step Quartz accepts on it and the names its values may take.
type fieldSpec struct {
	name     string
	min, max int
	maxStep  int
	names    []string // names[i] is value min+i (months, weekdays)
}

var specs = [numFields]fieldSpec{
	fSeconds:    {name: "seconds", min: 0, max: 59, maxStep: 59},
	fMinutes:    {name: "minutes", min: 0, max: 59, maxStep: 59},
	fHours:      {name: "hours", min: 0, max: 23, maxStep: 23},
	fDayOfMonth: {name: "day-of-month", min: 1, max: 31, maxStep: 31},
	fMonth: {name: "month", min: 1, max: 12, maxStep: 12, names: []string{
		"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}},
	fDayOfWeek: {name: "day-of-week", min: 1, max: 7, maxStep: 7, names: []string{
		"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}},
	fYear: {name: "year", min: MinYear, max: MaxYear, maxStep: MaxYear - MinYear},
}

// maxLastDayOffset is the largest n in "L-n", as in Quartz.
const maxLastDayOffset = 30

// parser holds the expression being parsed, for positions in errors.
type parser struct {
	expr  string
	upper string // expr in upper case (ASCII only, so offsets agree)
	e     *Expression
	sets  [numFields]bitset // values of the plain fields, bit v-min
}

// errorAt builds a SyntaxError for field f at byte offset off of the
// expression.
func (p *parser) errorAt(f string, off int, format string, args ...any) *SyntaxError {
	if off > len(p.expr) {
		off = len(p.expr)
	}
	return &SyntaxError{
		Field: f,
		Pos:   utf8.RuneCountInString(p.expr[:off]) + 1,
		Msg:   fmt.Sprintf(format, args...),
	}
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

func parse(expr string) (*Expression, error) {
	p := &parser{expr: expr, upper: asciiUpper(expr), e: &Expression{expr: expr}}

	// Split on spaces and tabs, as Quartz does, keeping each field's offset.
	var starts, ends [numFields]int
	n := 0
	for i := 0; i < len(expr); {
		if isBlank(expr[i]) {
			i++
			continue
		}
		j := i
		for j < len(expr) && !isBlank(expr[j]) {
			j++
		}
		if n == numFields {
			return nil, p.errorAt("expression", i,
				"too many fields: an expression has 6 or 7 (seconds minutes hours day-of-month month day-of-week [year])")
		}
		starts[n], ends[n] = i, j
		n++
		i = j
	}
	if n < fYear {
		return nil, p.errorAt("expression", len(expr),
			"too few fields (%d): an expression has 6 or 7 (seconds minutes hours day-of-month month day-of-week [year])", n)
	}

	// "?" marks the day field that does not choose days.
	dayOfMonthUnset, dayOfWeekUnset := false, false
	for f := 0; f < n; f++ {
		text := p.upper[starts[f]:ends[f]]
		spec := &specs[f]
		if text == "?" {
			switch f {
			case fDayOfMonth:
				dayOfMonthUnset = true
				continue
			case fDayOfWeek:
				if dayOfMonthUnset {
					return nil, p.errorAt(spec.name, starts[f],
						`"?" can only be given for day-of-month or day-of-week, not both`)
				}
				dayOfWeekUnset = true
				continue
			}
		}
		if err := p.field(f, text, starts[f]); err != nil {
			return nil, err
		}
	}
	if n == fYear {
		p.addRange(fYear, MinYear, MaxYear, 1)
	}
	if !dayOfMonthUnset && !dayOfWeekUnset {
		return nil, p.errorAt(specs[fDayOfWeek].name, starts[fDayOfWeek],
			`day-of-month and day-of-week are both given: one of them must be "?"`)
	}

	e := p.e
	e.byWeek = dayOfMonthUnset
	e.seconds = p.sets[fSeconds][0]
	e.minutes = p.sets[fMinutes][0]
	e.hours = uint32(p.sets[fHours][0])
	e.daysOfMonth = uint32(p.sets[fDayOfMonth][0]) << 1 // bit v-1 → bit v
	e.months = uint16(p.sets[fMonth][0]) << 1
	if e.weekKind == weekEvery {
		e.daysOfWeek = uint8(p.sets[fDayOfWeek][0]) << 1
	}
	e.years = p.sets[fYear]
	hours := p.upper[starts[fHours]:ends[fHours]]
	e.fixedHour = !strings.ContainsAny(hours, "*/")
	return e, nil
}

// field parses one field's comma-separated list.
func (p *parser) field(f int, text string, off int) error {
	spec := &specs[f]
	if f == fDayOfWeek {
		// A day-of-week given as "nL", "n#k" or a lone "L" inside a list has
		// no meaning Quartz supports: reject it before the items.
		if strings.Contains(text, ",") {
			if i := strings.IndexAny(text, "L#"); i >= 0 {
				what := `"L"`
				if text[i] == '#' {
					what = `"#"`
				}
				return p.errorAt(spec.name, off+i, "%s cannot be combined with other days of the week in a list", what)
			}
		}
	}
	itemStart := 0
	for i := 0; i <= len(text); i++ {
		if i < len(text) && text[i] != ',' {
			continue
		}
		item := text[itemStart:i]
		if item == "" {
			return p.errorAt(spec.name, off+itemStart, "empty list item")
		}
		if err := p.item(f, item, off+itemStart); err != nil {
			return err
		}
		itemStart = i + 1
	}
	return nil
}

// item parses one list item of field f; off is its byte offset in expr.
func (p *parser) item(f int, item string, off int) error {
	spec := &specs[f]
	if i := strings.IndexByte(item, '?'); i >= 0 {
		if f == fDayOfMonth || f == fDayOfWeek {
			return p.errorAt(spec.name, off+i, `"?" must be the whole field`)
		}
		return p.errorAt(spec.name, off+i, `"?" can only be given for day-of-month or day-of-week`)
	}
	switch f {
	case fDayOfMonth:
		if item[0] == 'L' {
			return p.lastDay(item, off)
		}
		if strings.HasSuffix(item, "W") {
			return p.nearestWeekday(item, off)
		}
	case fDayOfWeek:
		if item == "L" { // alone, "L" is Saturday
			p.addRange(f, 7, 7, 1)
			return nil
		}
		if i := strings.IndexAny(item, "L#"); i >= 0 {
			return p.weekdayOfMonth(item, off, i)
		}
	}

	c := cursor{s: item, base: off}
	var start, end, step int
	endAt := off // where the range's end is written
	var startName bool
	star := false
	switch item[0] {
	case '*':
		c.i++
		star = true
		start, end, step = spec.min, spec.max, 1
		if !c.done() && c.peek() != '/' {
			return p.errorAt(spec.name, c.pos(), `unexpected %s after "*"`, p.char(c.pos()))
		}
	case '/':
		// Quartz reads "/n" as "*/n".
		star = true
		start, end, step = spec.min, spec.max, 1
	default:
		var err error
		start, startName, err = p.value(f, &c)
		if err != nil {
			return err
		}
		end, step = start, 1
		if !c.done() && c.peek() == '-' {
			c.i++
			endAt = c.pos()
			if c.done() {
				return p.errorAt(spec.name, c.pos(), `"-" must be followed by a value`)
			}
			var endName bool
			end, endName, err = p.value(f, &c)
			if err != nil {
				return err
			}
			if endName != startName {
				return p.errorAt(spec.name, endAt, "a range takes two numbers or two names, not one of each")
			}
			if f == fYear && end < start {
				return p.errorAt(spec.name, endAt, "year range %d-%d runs backwards", start, end)
			}
		} else if !c.done() && c.peek() == '/' {
			end = spec.max // "a/n": from a to the end of the field
		}
	}
	if !c.done() && c.peek() == '/' {
		if startName {
			// Quartz ignores a step after a name; rather than mean
			// something else, refuse it.
			return p.errorAt(spec.name, c.pos(), "a step cannot follow a name; use numbers")
		}
		slash := c.pos()
		c.i++
		if c.done() || !isDigit(c.peek()) {
			return p.errorAt(spec.name, slash, `"/" must be followed by a number`)
		}
		stepPos := c.pos()
		n, err := p.number(spec.name, &c)
		if err != nil {
			return err
		}
		if n < 1 || n > spec.maxStep {
			return p.errorAt(spec.name, stepPos, "step %d out of range 1-%d", n, spec.maxStep)
		}
		step = n
	}
	if !c.done() {
		return p.errorAt(spec.name, c.pos(), "unexpected %s", p.char(c.pos()))
	}
	if !star {
		if start < spec.min || start > spec.max {
			return p.errorAt(spec.name, off, "value %d out of range %d-%d", start, spec.min, spec.max)
		}
		if end < spec.min || end > spec.max {
			return p.errorAt(spec.name, endAt, "value %d out of range %d-%d", end, spec.min, spec.max)
		}
	}
	p.addRange(f, start, end, step)
	return nil
}

// addRange adds start, start+step, … up to end to field f. A range whose
// end is below its start wraps past the field's largest value to its
// smallest (hours 22-2 are 22, 23, 0, 1, 2), with the step counted across
// the wrap, as Quartz does.
func (p *parser) addRange(f, start, end, step int) {
	spec := &specs[f]
	width := spec.max - spec.min + 1
	if end < start {
		end += width
	}
	for v := start; v <= end; v += step {
		w := v
		if w > spec.max {
			w -= width
		}
		p.sets[f].set(w - spec.min)
	}
}

// value reads a number, or a name in the month and day-of-week fields.
func (p *parser) value(f int, c *cursor) (v int, isName bool, err error) {
	spec := &specs[f]
	if c.done() {
		return 0, false, p.errorAt(spec.name, c.pos(), "missing value")
	}
	ch := c.peek()
	if isDigit(ch) {
		v, err = p.number(spec.name, c)
		return v, false, err
	}
	if ch >= 'A' && ch <= 'Z' && spec.names != nil {
		at := c.pos()
		j := c.i
		for j < len(c.s) && c.s[j] >= 'A' && c.s[j] <= 'Z' {
			j++
		}
		word := c.s[c.i:j]
		if len(word) > 3 {
			// "FRIL" is Friday then L, handled by weekdayOfMonth; any
			// other word longer than a name is not one.
			word = word[:3]
		}
		for i, name := range spec.names {
			if word == name {
				c.i += 3
				return spec.min + i, true, nil
			}
		}
		kind := "month"
		if f == fDayOfWeek {
			kind = "day"
		}
		return 0, false, p.errorAt(spec.name, at, "%q is not a %s name", p.expr[at:at+len(word)], kind)
	}
	return 0, false, p.errorAt(spec.name, c.pos(), "unexpected %s", p.char(c.pos()))
}

// number reads decimal digits (at least one).
func (p *parser) number(field string, c *cursor) (int, error) {
	at := c.pos()
	if c.done() || !isDigit(c.peek()) {
		if c.done() {
			return 0, p.errorAt(field, at, "missing number")
		}
		return 0, p.errorAt(field, at, "unexpected %s, expected a number", p.char(c.pos()))
	}
	n := 0
	for !c.done() && isDigit(c.peek()) {
		n = n*10 + int(c.peek()-'0')
		if n > 99999 {
			return 0, p.errorAt(field, at, "number too large")
		}
		c.i++
	}
	return n, nil
}

// lastDay parses the day-of-month forms that start with L: "L", "L-n",
// "LW" and "L-nW".
func (p *parser) lastDay(item string, off int) error {
	name := specs[fDayOfMonth].name
	c := cursor{s: item, base: off, i: 1}
	n := 0
	if !c.done() && c.peek() == '-' {
		c.i++
		at := c.pos()
		if c.done() || !isDigit(c.peek()) {
			return p.errorAt(name, at, `"L-" must be followed by the number of days before the last day (0-%d)`, maxLastDayOffset)
		}
		var err error
		if n, err = p.number(name, &c); err != nil {
			return err
		}
		if n > maxLastDayOffset {
			return p.errorAt(name, at, "offset from the last day %d out of range 0-%d", n, maxLastDayOffset)
		}
	}
	weekday := false
	if !c.done() && c.peek() == 'W' {
		weekday = true
		c.i++
	}
	if !c.done() {
		return p.errorAt(name, c.pos(), "unexpected %s after %q", p.char(c.pos()), p.expr[off:c.pos()])
	}
	if weekday {
		p.e.lastWeekdays |= 1 << n
	} else {
		p.e.lastDays |= 1 << n
	}
	return nil
}

// nearestWeekday parses "dW", the weekday nearest day d.
func (p *parser) nearestWeekday(item string, off int) error {
	name := specs[fDayOfMonth].name
	c := cursor{s: item, base: off}
	if !isDigit(c.peek()) {
		return p.errorAt(name, off, `"W" must follow a single day of the month, as in 15W`)
	}
	d, err := p.number(name, &c)
	if err != nil {
		return err
	}
	if c.i != len(item)-1 {
		return p.errorAt(name, c.pos(), `"W" must follow a single day of the month, not a range or step`)
	}
	if d < 1 || d > 31 {
		return p.errorAt(name, off, `"W" needs a day of the month 1-31, not %d`, d)
	}
	p.e.nearestWeekdays |= 1 << d
	return nil
}

// weekdayOfMonth parses "nL" (the last weekday n of the month) and "n#k"
// (the k-th weekday n of the month); mark is the offset of L or # in item.
func (p *parser) weekdayOfMonth(item string, off, mark int) error {
	spec := &specs[fDayOfWeek]
	c := cursor{s: item[:mark], base: off}
	if mark == 0 {
		return p.errorAt(spec.name, off, "%s must follow a day of the week", p.char(off))
	}
	w, _, err := p.value(fDayOfWeek, &c)
	if err != nil {
		return err
	}
	if !c.done() {
		return p.errorAt(spec.name, c.pos(), "%s must follow a single day of the week", p.char(off+mark))
	}
	if w < 1 || w > 7 {
		return p.errorAt(spec.name, off, "value %d out of range 1-7", w)
	}
	p.e.daysOfWeek = 1 << w
	if item[mark] == 'L' {
		if mark != len(item)-1 {
			return p.errorAt(spec.name, off+mark+1, "unexpected %s after %q", p.char(off+mark+1), p.expr[off:off+mark+1])
		}
		p.e.weekKind = weekLast
		return nil
	}
	c = cursor{s: item, base: off, i: mark + 1}
	at := c.pos()
	if c.done() || !isDigit(c.peek()) {
		return p.errorAt(spec.name, at, `"#" must be followed by a number 1-5`)
	}
	k, err := p.number(spec.name, &c)
	if err != nil {
		return err
	}
	if !c.done() {
		return p.errorAt(spec.name, c.pos(), "unexpected %s", p.char(c.pos()))
	}
	if k < 1 || k > 5 {
		return p.errorAt(spec.name, at, `"#" must be followed by a number 1-5, not %d`, k)
	}
	p.e.weekKind = weekNth
	p.e.nth = uint8(k)
	return nil
}

// cursor walks one list item; base is the item's offset in the expression.
type cursor struct {
	s    string
	i    int
	base int
}

func (c *cursor) done() bool { return c.i >= len(c.s) }
func (c *cursor) peek() byte { return c.s[c.i] }
func (c *cursor) pos() int   { return c.base + c.i }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// char shows the character at byte offset off of the expression in an
// error, as the user wrote it.
func (p *parser) char(off int) string {
	r, _ := utf8.DecodeRuneInString(p.expr[off:])
	return fmt.Sprintf("%q", r)
}

// asciiUpper upper-cases ASCII letters only, so byte offsets are kept.
func asciiUpper(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'a' && c <= 'z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'a' && b[j] <= 'z' {
					b[j] -= 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
