// A C++ template method for the demangler: wlspace::Matrix<double>::multiply(int). Usage: sym_cxx CPU_SECONDS
#include <cstdlib>
#include <ctime>
#include <vector>

namespace wlspace {
template <typename T> class Matrix {
public:
	explicit Matrix(int n) : n_(n), a_(n * n, T(1.0001)), b_(n * n, T(0.9999)), c_(n * n) {}
	__attribute__((noinline)) T multiply(int rounds)
	{
		for (int r = 0; r < rounds; r++)
			for (int i = 0; i < n_; i++)
				for (int j = 0; j < n_; j++) {
					T s = 0;
					for (int k = 0; k < n_; k++)
						s += a_[i * n_ + k] * b_[k * n_ + j];
					c_[i * n_ + j] = s;
				}
		return c_[0];
	}

private:
	int n_;
	std::vector<T> a_, b_, c_;
};
} // namespace wlspace

static long long cpu_ns()
{
	timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

volatile double sink;

int main(int argc, char **argv)
{
	long long end = cpu_ns() + (long long)((argc > 1 ? atof(argv[1]) : 1.0) * 1e9);
	wlspace::Matrix<double> m(48);

	while (cpu_ns() < end)
		sink = m.multiply(1);
	return 0;
}
