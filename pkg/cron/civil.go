package cron

// Calendar arithmetic on local wall-clock times, done by hand so that the
// search for a fire time never touches a time zone until it has a
// candidate. A wall time is held as "naive" seconds: the Unix seconds the
// same year/month/day/hour/minute/second would have in UTC. Naive seconds
// order exactly like wall times do, and adding 86400 moves one calendar day.

const secondsPerDay = 86400

// daysFromCivil returns the days from 1970-01-01 to y-m-d in the proleptic
// Gregorian calendar (negative before 1970). m is 1-12, d is 1-31.
func daysFromCivil(y, m, d int) int64 {
	// Count years from March so that the leap day is the last day of a
	// year; then every year has the same month lengths up to it.
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400 // [0, 399]
	mp := (m + 9) % 12 // March = 0
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy // [0, 146096]
	return int64(era)*146097 + int64(doe) - 719468
}

// civilFromDays is the inverse of daysFromCivil.
func civilFromDays(z int64) (y, m, d int) {
	z += 719468
	era := z / 146097
	if z < 0 && z%146097 != 0 {
		era--
	}
	doe := int(z - era*146097)                             // [0, 146096]
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365 // [0, 399]
	doy := doe - (365*yoe + yoe/4 - yoe/100)               // [0, 365]
	mp := (5*doy + 2) / 153                                // March = 0
	d = doy - (153*mp+2)/5 + 1
	m = mp + 3
	if m > 12 {
		m -= 12
	}
	y = yoe + int(era)*400
	if m <= 2 {
		y++
	}
	return y, m, d
}

// weekdayOfDays returns the day of the week of a day number from
// daysFromCivil, 0 = Sunday … 6 = Saturday (1970-01-01 was a Thursday).
func weekdayOfDays(z int64) int {
	w := (z + 4) % 7
	if w < 0 {
		w += 7
	}
	return int(w)
}

func isLeap(y int) bool {
	return y%4 == 0 && (y%100 != 0 || y%400 == 0)
}

// daysIn returns the number of days of month m (1-12) of year y.
func daysIn(y, m int) int {
	switch m {
	case 2:
		if isLeap(y) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// wall is a local wall-clock time broken into fields.
type wall struct {
	year, month, day, hour, minute, second int
}

func (w wall) naive() int64 {
	return daysFromCivil(w.year, w.month, w.day)*secondsPerDay +
		int64(w.hour*3600+w.minute*60+w.second)
}

func wallOf(naive int64) wall {
	days := naive / secondsPerDay
	rem := naive % secondsPerDay
	if rem < 0 {
		rem += secondsPerDay
		days--
	}
	y, m, d := civilFromDays(days)
	r := int(rem)
	return wall{year: y, month: m, day: d, hour: r / 3600, minute: r / 60 % 60, second: r % 60}
}
