package bio

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseFASTA(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		text string
		want []Record
	}{
		{"one record", ">a\nMKT\n", []Record{{ID: "a", Sequence: "MKT"}}},
		{"no final newline", ">a\nMKT", []Record{{ID: "a", Sequence: "MKT"}}},
		{"wrapped sequence is joined", ">a\nMKT\nAYI\nAK\n", []Record{{ID: "a", Sequence: "MKTAYIAK"}}},
		{"whitespace inside sequence lines is removed", ">a\nMKT AYI\tAK  \n", []Record{{ID: "a", Sequence: "MKTAYIAK"}}},
		{"case is kept", ">a\nmkTa\n", []Record{{ID: "a", Sequence: "mkTa"}}},
		{"description after the id", ">sp|P1|X_HUMAN  Some protein OS=Homo sapiens\nMK\n",
			[]Record{{ID: "sp|P1|X_HUMAN", Description: "Some protein OS=Homo sapiens", Sequence: "MK"}}},
		{"tab separates id and description", ">a\tdesc\nMK\n", []Record{{ID: "a", Description: "desc", Sequence: "MK"}}},
		{"CRLF line ends", ">a d\r\nMKT\r\nAY\r\n>b\r\nGG\r\n",
			[]Record{{ID: "a", Description: "d", Sequence: "MKTAY"}, {ID: "b", Sequence: "GG"}}},
		{"blank lines anywhere", "\n\n>a\n\nMK\n\n\n>b\nGG\n\n", []Record{{ID: "a", Sequence: "MK"}, {ID: "b", Sequence: "GG"}}},
		{"comment lines are skipped", ";file comment\n>a\n;inside\nMK\n", []Record{{ID: "a", Sequence: "MK"}}},
		{"space after '>' is skipped, as Biopython does", "> a desc\nMK\n", []Record{{ID: "a", Description: "desc", Sequence: "MK"}}},
		{"indented header", "  >a\nMK\n", []Record{{ID: "a", Sequence: "MK"}}},
		{"duplicate ids are the caller's business", ">a\nM\n>a\nK\n", []Record{{ID: "a", Sequence: "M"}, {ID: "a", Sequence: "K"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseFASTA(tt.text)
			if err != nil {
				t.Fatalf("ParseFASTA: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseFASTA = %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestParseFASTAErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		text string
		want string // substring of the error
	}{
		{"empty text", "", "no FASTA record"},
		{"only comments and blanks", ";c\n\n", "no FASTA record"},
		{"sequence before the first header", "MKT\n>a\nMK\n", "line 1: sequence data before the first '>' header"},
		{"sequence before header after blank lines", "\n\nMKT\n", "line 3:"},
		{"header without id", ">a\nMK\n>\nGG\n", "line 3: header has no id"},
		{"header of only spaces", ">  \nGG\n", "line 1: header has no id"},
		{"record without sequence in the middle", ">a\n>b\nMK\n", `line 1: record "a" has no sequence`},
		{"last record without sequence", ">a\nMK\n\n>b\n\n", `line 4: record "b" has no sequence`},
		{"invalid UTF-8", ">a\nMK\n\xff\n", "line 3: not valid UTF-8"},
		{"CRLF keeps line numbers", ">a\r\nMK\r\n>b\r\n", `line 3: record "b"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseFASTA(tt.text)
			if err == nil {
				t.Fatalf("ParseFASTA = %#v, want an error containing %q", got, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

// formatFASTA writes records back as FASTA, one sequence line per record.
func formatFASTA(records []Record) string {
	var b strings.Builder
	for _, r := range records {
		b.WriteString(">" + r.ID)
		if r.Description != "" {
			b.WriteString(" " + r.Description)
		}
		b.WriteString("\n" + r.Sequence + "\n")
	}
	return b.String()
}

// FuzzParseFASTA checks that any text either parses or fails cleanly, and that what parses
// survives a write-and-read round trip unchanged.
func FuzzParseFASTA(f *testing.F) {
	for _, seed := range []string{
		"",
		">a\nMKT\n",
		">a desc\r\nMKT\r\nAYI\r\n>b\nGG",
		";comment\n>x\n\nMK TA\n",
		"MKT\n>a\nM\n",
		">\nMK\n",
		">a\n>b\nMK\n",
		"  >a  two  words \n m k \n",
		">a\u00a0b\nM\u0085K\n",
		">a\n\r\n\rMK\r\r\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		records, err := ParseFASTA(text)
		if err != nil {
			if records != nil {
				t.Fatalf("error %v came with records %#v", err, records)
			}
			return
		}
		if len(records) == 0 {
			t.Fatal("no error and no records")
		}
		for _, r := range records {
			if r.ID == "" || r.Sequence == "" {
				t.Fatalf("record with an empty id or sequence: %#v", r)
			}
		}
		again, err := ParseFASTA(formatFASTA(records))
		if err != nil {
			t.Fatalf("re-parsing the formatted records: %v\nrecords: %#v", err, records)
		}
		if !reflect.DeepEqual(again, records) {
			t.Fatalf("round trip changed the records:\n got %#v\nwant %#v", again, records)
		}
	})
}
