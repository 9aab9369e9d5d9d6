package config

import (
	"reflect"
	"testing"
)

// filled returns settings with every field set to a non-zero value, found
// by reflection, so that a field added later is covered without editing
// the test.
func filled(t *testing.T) Settings {
	t.Helper()
	var s Settings
	v := reflect.ValueOf(&s).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("x" + v.Type().Field(i).Name)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(i + 1))
		case reflect.Slice:
			e := reflect.New(f.Type().Elem()).Elem()
			setNonZero(t, e, v.Type().Field(i).Name)
			f.Set(reflect.Append(reflect.MakeSlice(f.Type(), 0, 1), e))
		case reflect.Map:
			m := reflect.MakeMap(f.Type())
			k := reflect.New(f.Type().Key()).Elem()
			e := reflect.New(f.Type().Elem()).Elem()
			setNonZero(t, k, "key")
			setNonZero(t, e, "value")
			m.SetMapIndex(k, e)
			f.Set(m)
		default:
			t.Fatalf("Settings.%s: kind %s: teach filled and Clone about it", v.Type().Field(i).Name, f.Kind())
		}
	}
	return s
}

func setNonZero(t *testing.T, v reflect.Value, name string) {
	t.Helper()
	switch v.Kind() {
	case reflect.String:
		v.SetString(name)
	case reflect.Uint8:
		v.SetUint('x')
	case reflect.Struct:
		for i := range v.NumField() {
			setNonZero(t, v.Field(i), name)
		}
	case reflect.Float64:
		v.SetFloat(1.5)
	default:
		t.Fatalf("%s: element kind %s: teach the test about it", name, v.Kind())
	}
}

// change changes v in place to another value.
func change(t *testing.T, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "!")
	case reflect.Uint8:
		v.SetUint(v.Uint() + 1)
	case reflect.Float64:
		v.SetFloat(v.Float() + 1)
	case reflect.Struct:
		for i := range v.NumField() {
			change(t, v.Field(i))
		}
	default:
		t.Fatalf("element kind %s: teach the test about it", v.Kind())
	}
}

// TestCloneSharesNothing: a clone equals its original, and changing any
// list or map of the clone leaves the original as it was. It fails when a
// field of a reference kind is added to Settings and Clone forgets it.
func TestCloneSharesNothing(t *testing.T) {
	orig := filled(t)
	keep := filled(t)
	c := orig.Clone()
	if !reflect.DeepEqual(c, orig) {
		t.Fatalf("the clone differs from the original:\n%+v\n%+v", c, orig)
	}
	v := reflect.ValueOf(&c).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Slice:
			change(t, f.Index(0))
		case reflect.Map:
			for _, k := range f.MapKeys() {
				f.SetMapIndex(k, reflect.Zero(f.Type().Elem()))
			}
		}
	}
	if !reflect.DeepEqual(orig, keep) {
		for i := range v.NumField() {
			if !reflect.DeepEqual(reflect.ValueOf(orig).Field(i).Interface(), reflect.ValueOf(keep).Field(i).Interface()) {
				t.Errorf("Settings.%s: changing the clone changed the original: Clone must copy it", v.Type().Field(i).Name)
			}
		}
	}
}
