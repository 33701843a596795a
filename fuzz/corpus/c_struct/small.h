struct s {
	int a:3, b:5;
	union { int x; long y; };
	void (*fn)(int);
	char name[16] __aligned(8);
} ;
