// C++: classes, inheritance, references, static members, virtual functions.
#include <cstddef>

struct Base {
	int id;
	char tag;
};

struct Mixin {
	double weight;
};

class Derived : public Base, public Mixin {
public:
	static int instances;
	short extra;
	int &ref;
	const Base &cref;
	int &&rref;
	Derived(int &r, const Base &b, int &&rr) : extra(0), ref(r), cref(b), rref(static_cast<int &&>(rr)) {}
};

class Virt {
public:
	virtual ~Virt() {}
	virtual int get() const { return v; }
	int v = 0;
};

class VirtChild : public Virt {
public:
	long more = 0;
	int get() const override { return v + (int)more; }
};

struct MemberPtrs {
	int Base::*data_ptr;
	int (Virt::*method_ptr)() const;
	decltype(nullptr) np;
};

struct Outer {
	struct Inner {
		int x;
		char y;
	} inner;
	enum class Mode : unsigned char { A, B } mode;
	bool flags[3];
};

template <typename T> struct Box {
	T value;
	unsigned char state;
};

int Derived::instances = 0;
int g_int = 1;
Base g_base;
Derived g_derived(g_int, g_base, 3);
VirtChild g_virt;
MemberPtrs g_memptrs;
Outer g_outer;
Box<long> g_box_long;
Box<char> g_box_char;

int use_classes() { return g_derived.extra + g_virt.get() + g_outer.inner.x + (int)g_box_long.value; }
